"""What every slice of an account's reconciliation needs besides its entries, read once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date
from decimal import Decimal

import polars as pl

from pipelines.reconciliation.findings import Acknowledgements, read_acknowledgements
from pipelines.reconciliation.slices import Reader, by_account
from transforms.cross_checks import ReportedBreakdown, read_breakdown, read_summary


@dataclass(frozen=True)
class Context:
    """What every slice needs besides its entries: read once per reconciliation."""

    subscriptions: pl.DataFrame
    campaigns: pl.DataFrame
    summary: Decimal | str  # the stored balance, or why the summary cannot be checked
    breakdown: ReportedBreakdown | str
    summary_day: date | None = None  # the UTC day the summary was fetched: it observes then
    history_first_day: date | None = None  # where discovery found the ledger begins
    acknowledgements: Acknowledgements = field(default_factory=dict)


def load_context(source: Reader, account: str) -> Context:
    """One account's context (``ContextReads`` of one)."""
    return ContextReads.read(source, [account]).context(account)


@dataclass(frozen=True)
class ContextReads:
    """Everything but the ledger, read for every account at once: six queries whatever the
    number of accounts (a query per account scanned each table once per company). Each
    account's ``Context`` is built from them in its own pass, so one account's odd snapshot is
    that account's failure alone.

    The snapshots are handed to the checks as stored: their payloads were parsed when they
    landed, and are not parsed again here.
    """

    subscriptions: Callable[[str], pl.DataFrame]
    campaigns: Callable[[str], pl.DataFrame]
    summaries: Callable[[str], pl.DataFrame]
    histories: Callable[[str], pl.DataFrame]
    breakdowns: Callable[[str], pl.DataFrame]
    acknowledgements: dict[str, Acknowledgements]
    # Each account's Context once built: the run's shared reads and its own pass both ask.
    _built: dict[str, Context] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def read(cls, source: Reader, accounts: Sequence[str]) -> ContextReads:
        names = [list(accounts)]
        among = "account IN (SELECT unnest(?::VARCHAR[]))"
        return cls(
            subscriptions=by_account(source.read(
                f"SELECT account, fetched_at, plan, status FROM subscription_snapshots "
                f"WHERE {among} AND shape_ok",
                names,
            )),
            campaigns=by_account(source.read(
                f"SELECT account, campaign_id, name FROM campaigns_current WHERE {among}", names
            )),
            summaries=by_account(source.read(
                "SELECT account, balance, shape_ok, fetched_at FROM consumption_snapshots "
                f"WHERE {among} QUALIFY row_number() OVER "
                "(PARTITION BY account ORDER BY fetched_at DESC) = 1",
                names,
            )),
            histories=by_account(source.read(
                f"SELECT account, first_day FROM ledger_history WHERE {among} QUALIFY "
                "row_number() OVER (PARTITION BY account ORDER BY discovered_at DESC) = 1",
                names,
            )),
            breakdowns=by_account(source.read(
                "SELECT account, period_start, period_end, item_index, agent_id, campaign_id, "
                f"channel, credits, shape_ok FROM breakdown_snapshots WHERE {among} "
                "QUALIFY fetched_at = max(fetched_at) OVER (PARTITION BY account) "
                "ORDER BY account, item_index",
                names,
            )),
            acknowledgements=read_acknowledgements(source, names[0]),
        )  # fmt: skip

    def context(self, account: str) -> Context:
        if account not in self._built:
            self._built[account] = self._parse(account)
        return self._built[account]

    def _parse(self, account: str) -> Context:
        summary = self.summaries(account).drop("account")
        history = self.histories(account)
        breakdown = self.breakdowns(account).drop("account")
        return Context(
            subscriptions=self.subscriptions(account),
            campaigns=self.campaigns(account),
            summary=read_summary(summary.to_dicts()),
            breakdown=read_breakdown(breakdown.to_dicts()),
            summary_day=(
                summary["fetched_at"][0].astimezone(UTC).date() if summary.height else None
            ),
            history_first_day=history["first_day"][0] if history.height else None,
            acknowledgements=self.acknowledgements.get(account, {}),
        )
