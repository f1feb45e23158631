"""The balance, twice: what the platform reports and what the ledger adds up to, side by side.

The platform's balance is the latest readable /Consumption snapshot (``consumption_snapshots
.balance``); the ledger's is the last closing of the daily statement, which counts every hidden
movement, the one after the last entry (against that same /Consumption balance) included. The
two agree after a reconciliation that read the snapshot; a difference says the snapshot is newer
than the last reconciliation, or that the reconciliation could not compare them. Either way it
is shown, never one figure silently taken for the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from dashboards.model import Account
from dashboards.money import money_text, signed_money_text
from dashboards.pages.common import when


@dataclass(frozen=True)
class Balances:
    ledger: Decimal | None  # last closing of the daily statement
    ledger_day: date | None
    platform: Decimal | None  # latest /Consumption balance
    platform_at: datetime | None

    @property
    def difference(self) -> Decimal | None:
        """Platform minus ledger; None unless both are known."""
        if self.ledger is None or self.platform is None:
            return None
        return self.platform - self.ledger


def balances(account: Account) -> Balances:
    ledger: Decimal | None = None
    day: date | None = None
    if account.daily.height:
        ledger = account.daily["closing"][-1]
        day = account.daily["day"][-1]
    consumption = account.consumption
    platform = consumption.balance if consumption is not None else None
    platform_at = consumption.fetched_at if consumption is not None else None
    return Balances(ledger, day, platform, platform_at)


def difference_text(found: Balances) -> str:
    difference = found.difference
    if difference is None:
        missing = "the platform's balance" if found.platform is None else "the ledger's"
        return f"unknown: {missing} is not known"
    if not difference:
        return "0.00: the ledger adds up to the platform's balance"
    return (
        f"{signed_money_text(difference)}: the /Consumption balance was read after the last "
        "reconciliation, or the reconciliation could not compare them; run `creditlens sync`"
    )


def balance_facts(account: Account) -> list[tuple[str, str]]:
    """Both balances and their difference, as the overview's headline lists them."""
    found = balances(account)
    platform = (
        f"{money_text(found.platform)} at {when(found.platform_at)}"
        if found.platform is not None
        else "not read yet (no readable /Consumption snapshot)"
    )
    ledger = (
        f"{money_text(found.ledger)} (closing of {when(found.ledger_day)})"
        if found.ledger is not None
        else "no reconciled ledger days yet"
    )
    return [
        ("Balance reported by the platform (/Consumption)", platform),
        ("Balance by the ledger", ledger),
        ("Difference (platform - ledger)", difference_text(found)),
    ]
