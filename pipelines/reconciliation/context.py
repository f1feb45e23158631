"""What every slice of an account's reconciliation needs besides its entries, read once."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date
from decimal import Decimal

import polars as pl

from pipelines.reconciliation.findings import Acknowledgements, read_acknowledgements
from pipelines.reconciliation.slices import Reader
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
    """Everything but the ledger: small tables and the latest snapshots, read once.

    The snapshots are handed to the checks as stored: their payloads were parsed when they
    landed, and are not parsed again here.
    """
    subscriptions = source.read(
        "SELECT account, fetched_at, plan, status FROM subscription_snapshots "
        "WHERE account = ? AND shape_ok",
        [account],
    )
    campaigns = source.read(
        "SELECT account, campaign_id, name FROM campaigns_current WHERE account = ?", [account]
    )
    summary = source.read(
        "SELECT balance, shape_ok, fetched_at FROM consumption_snapshots WHERE account = ? "
        "ORDER BY fetched_at DESC LIMIT 1",
        [account],
    )
    history = source.read(
        "SELECT first_day FROM ledger_history WHERE account = ? "
        "ORDER BY discovered_at DESC LIMIT 1",
        [account],
    )
    breakdown = source.read(
        "SELECT period_start, period_end, item_index, agent_id, campaign_id, channel, credits, "
        "shape_ok FROM breakdown_snapshots WHERE account = ? AND fetched_at = "
        "(SELECT max(fetched_at) FROM breakdown_snapshots WHERE account = ?) "
        "ORDER BY item_index",
        [account, account],
    )
    return Context(
        subscriptions=subscriptions,
        campaigns=campaigns,
        summary=read_summary(summary.to_dicts()),
        breakdown=read_breakdown(breakdown.to_dicts()),
        summary_day=summary["fetched_at"][0].astimezone(UTC).date() if summary.height else None,
        history_first_day=history["first_day"][0] if history.height else None,
        acknowledgements=read_acknowledgements(source, account),
    )
