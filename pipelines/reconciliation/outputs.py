"""The rows reconciliation writes, built from one slice of the ordered ledger at a time.

Every output is per entry or per UTC day, and a slice holds whole days, so a slice's rows are
final as soon as the slice is reconciled; only a day's opening balance needs the entry before
the slice, which the caller passes along.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from pipelines.reconciliation.context import Context
from pipelines.reconciliation.slices import by_account
from transforms.aggregate import daily_balance
from transforms.cross_checks import ItemKey, ReportedBreakdown, ledger_debits_of_each
from transforms.enrich import ledger_enriched
from transforms.entry_type import EntryTypeRules, type_meanings

ENRICHED_COLUMNS = [
    "account", "entry_id", "chain_position", "created_at", "entry_type", "category",
    "amount", "signed_amount", "balance_before", "balance_after", "channel",
    "agent_id", "campaign_id", "campaign_name", "plan", "status", "subscription_backfilled",
    "entry_day", "entry_month",
]  # fmt: skip


def daily_rows(
    ordered: pl.DataFrame, previous: pl.DataFrame | None, rules: EntryTypeRules
) -> pl.DataFrame:
    """`daily_balance` rows of the slice's days; `previous` is the entry before the slice (of
    each account, when `ordered` holds several: an agency's tails in one pass).

    The previous entry is chained in so the slice's first day opens at its balance_after (and a
    gap right at the boundary is that day's hidden movement), then its own day is dropped: it
    belongs to the slice before. The run's id is the caller's to add.
    """
    chain = ordered
    if previous is not None:
        chain = pl.concat([previous.select(ordered.columns), ordered], how="vertical_relaxed")
    daily = daily_balance(chain, rules)
    if previous is not None:
        before = previous.select("account", day=pl.col("created_at").dt.date())
        daily = daily.join(before, on=["account", "day"], how="anti", maintain_order="left")
    per_day = ordered.group_by("account", pl.col("created_at").dt.date().alias("day")).agg(
        pl.len().cast(pl.Int32).alias("entries")
    )
    return daily.join(per_day, on=["account", "day"], how="left", maintain_order="left")


def enriched_rows(
    ordered: pl.DataFrame,
    subscriptions: pl.DataFrame,
    campaigns: pl.DataFrame,
    rules: EntryTypeRules,
) -> pl.DataFrame:
    """`ledger_chain` rows (the enriched ledger but its descriptions): category, plan and
    campaign name; chain_position 0-based."""
    meanings = type_meanings(ordered["entry_type"], rules).select("entry_type", "category")
    return (
        ledger_enriched(ordered, subscriptions, campaigns)
        .join(meanings, on="entry_type", how="left", nulls_equal=True)
        .with_columns(
            (pl.col("chain_position") - 1).alias("chain_position"),
            # created_at is UTC-typed, so its date and month are UTC's, whoever reads them.
            pl.col("created_at").dt.date().alias("entry_day"),
            pl.col("created_at").dt.truncate("1mo").dt.date().alias("entry_month"),
        )
        .select(ENRICHED_COLUMNS)
    )


def stamped(breaks: pl.DataFrame, run_id: str, checked_at: datetime) -> pl.DataFrame:
    """`balance_breaks` rows as stored: the run that found them and when."""
    return breaks.with_columns(
        pl.lit(run_id).alias("run_id"),
        pl.lit(checked_at, dtype=pl.Datetime("us", "UTC")).alias("checked_at"),
    )


@dataclass(frozen=True)
class SliceRows:
    """What one slice adds to its account's pass besides its chain: its days' balances, its
    enriched rows and its debits within the breakdown's period (None: no period to check)."""

    daily: pl.DataFrame
    chain: pl.DataFrame
    debits: dict[ItemKey, int] | None


def slice_rows(
    ordered: pl.DataFrame,
    previous: pl.DataFrame | None,
    contexts: Mapping[str, Context],
    rules: EntryTypeRules,
) -> dict[str, SliceRows]:
    """Each account's slice rows, for the accounts of `contexts`: one account's slice in its own
    pass, or every account's tail in the agency's (`tails`), by the same rules."""
    daily = by_account(daily_rows(ordered, previous, rules))
    chain = by_account(
        enriched_rows(
            ordered,
            pl.concat([c.subscriptions for c in contexts.values()], how="vertical_relaxed"),
            pl.concat([c.campaigns for c in contexts.values()], how="vertical_relaxed"),
            rules,
        )
    )
    periods = {
        account: (c.breakdown.start, c.breakdown.end)
        for account, c in contexts.items()
        if isinstance(c.breakdown, ReportedBreakdown)
    }
    debits = ledger_debits_of_each(ordered, periods, rules)
    return {
        account: SliceRows(daily(account), chain(account), debits.get(account))
        for account in contexts
    }
