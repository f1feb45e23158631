"""The balance before the first entry: a ledger that explains the whole balance opens at zero.

A non-zero opening is a movement before the first entry, or history not synced; it is a finding
of its own (kind 'opening', placement before_first), never silent. Days deliberately left out of
a sync (history discovery found entries before the first landed one) explain it instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import polars as pl

from transforms.breaks import conform_breaks, empty_breaks, money_text
from transforms.cross_checks import CheckOutcome, unavailable


@dataclass(frozen=True)
class LedgerStart:
    """The first entry of an account's chain: what the opening balance is read from."""

    account: str
    entry_id: str
    created_at: datetime
    balance_before: Decimal


def ledger_start(first_row: Mapping[str, Any]) -> LedgerStart:
    return LedgerStart(
        first_row["account"],
        first_row["entry_id"],
        _utc(first_row["created_at"]),
        Decimal(first_row["balance_before"]),
    )


def compare_opening(
    start: LedgerStart | str,
    history_first_day: date | None,
    *,
    tolerance: Decimal = Decimal(0),
) -> CheckOutcome:
    """The balance before the first landed entry against zero.

    A ledger that explains the whole balance opens at zero. Anything else is a movement before
    the first entry (kind 'opening'), unless history discovery found entries on days before the
    first landed one: then those days were deliberately left out (``--since``,
    CREDITLENS_LEDGER_START) and the balance was carried in from them, which is said, not
    flagged. The status is ``ok`` (zero), ``break``, ``skipped`` or ``unavailable``.
    """
    tolerance = Decimal(tolerance)
    if isinstance(start, str):
        return unavailable(start, tolerance)
    opening = start.balance_before
    first = start.created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if abs(opening) <= tolerance:
        return CheckOutcome(
            "ok",
            f"The ledger of account {start.account} opens at zero before its first entry "
            f"{start.entry_id} at {first}.",
            empty_breaks(),
            tolerance,
        )
    if history_first_day is not None and history_first_day < start.created_at.date():
        return CheckOutcome(
            "skipped",
            f"History of account {start.account} from {history_first_day.isoformat()} to the "
            f"day before {start.created_at.date().isoformat()} was left out of this sync "
            f"(--since or CREDITLENS_LEDGER_START); the balance before the first synced entry, "
            f"{money_text(opening)}, is carried in from those days.",
            empty_breaks(),
            tolerance,
        )
    detail = (
        f"Opening balance on account {start.account}: expected 0 before the first entry "
        f"{start.entry_id} at {first}, actual {money_text(opening)}, difference "
        f"{money_text(opening)}: a movement before the first entry, or history not synced "
        "(see ledger_history; raise CREDITLENS_HISTORY_LIMIT or set CREDITLENS_LEDGER_START "
        "earlier)."
    )
    row = {
        "account": start.account,
        "kind": "opening",
        "break_start": None,
        "break_end": start.created_at,
        "expected_balance": Decimal(0),
        "observed_balance": opening,
        "gap": opening,
        "before_entry_id": None,
        "after_entry_id": start.entry_id,
        "ambiguous": False,
        "detail": detail,
    }
    return CheckOutcome("break", detail, conform_breaks(pl.DataFrame([row])), tolerance)


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
