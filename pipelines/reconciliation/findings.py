"""Placing every hidden movement in the balance it changes, and what people acknowledged.

The daily balance and the monthly statement must tie out to the platform's balance, so a
movement counts in the day it is observed whatever its placement: one between entries is already
inside the chain (``transforms.aggregate``); a movement before the first entry opens the first
day at zero; one after the last entry closes the day the platform's balance was read on.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import polars as pl

from pipelines.warehouse.finding_tables import LATEST_ACTIONS

# break_id -> the gap it was acknowledged with (the latest action being 'ack').
Acknowledgements = dict[str, Decimal]


def read_acknowledgements(source: Any, accounts: Sequence[str]) -> dict[str, Acknowledgements]:
    """Per account, the findings whose latest action is an acknowledgement, with the gap
    acknowledged: one query for every account."""
    acks = source.read(
        f"SELECT account, break_id, acked_gap FROM {LATEST_ACTIONS} "
        "WHERE account IN (SELECT unnest(?::VARCHAR[])) AND action = 'ack'",
        [list(accounts)],
    )
    found: dict[str, Acknowledgements] = {}
    for row in acks.iter_rows(named=True):
        found.setdefault(row["account"], {})[row["break_id"]] = row["acked_gap"]
    return found


def move_opening_into_day(daily: pl.DataFrame, opening: pl.DataFrame) -> pl.DataFrame:
    """The first day opens at what the ledger explains (zero) and carries the movement before
    the first entry among its hidden movements: opening + movements = closing still holds."""
    if not opening.height or not daily.height:
        return daily
    gap = opening["gap"][0]
    first = daily["day"].min()
    is_first = pl.col("day") == first
    return daily.with_columns(
        pl.when(is_first).then(pl.col("opening") - gap).otherwise(pl.col("opening")),
        pl.when(is_first)
        .then(pl.col("hidden_movements") + gap)
        .otherwise(pl.col("hidden_movements")),
    )


def after_last_day(last: pl.DataFrame | None, summary_day: date | None) -> date | None:
    """The day a movement after the last entry is observed: when the platform's balance was
    read, never before the last entry's own day."""
    if last is None or summary_day is None:
        return summary_day
    last_day = last["created_at"][0].astimezone(UTC).date()
    return max(last_day, summary_day)


def with_movement_after_last(
    daily: pl.DataFrame, movement: dict[str, Any], run_id: str
) -> pl.DataFrame:
    """A movement after the last entry, added to its day's hidden movements and closing; a day
    without entries gets a row of its own, opening at the last closing before it."""
    day, gap = movement["observed_on"], movement["gap"]
    if daily.filter(pl.col("day") == day).height:
        on_day = pl.col("day") == day
        return daily.with_columns(
            pl.when(on_day).then(pl.col(c) + gap).otherwise(pl.col(c)).cast(daily.schema[c])
            for c in ("hidden_movements", "closing")
        )
    before = daily.filter(pl.col("day") < day).sort("day").tail(1)
    if not before.height:
        return daily
    closing = before["closing"][0]
    zero = pl.lit(0).cast(daily.schema["debits"])
    added = before.select(
        "account",
        pl.lit(day, dtype=pl.Date).alias("day"),
        pl.lit(closing).cast(daily.schema["opening"]).alias("opening"),
        *(zero.alias(c) for c in ("debits", "credits", "refunds", "adjustments", "other")),
        pl.lit(gap).cast(daily.schema["hidden_movements"]).alias("hidden_movements"),
        pl.lit(closing + gap).cast(daily.schema["closing"]).alias("closing"),
        pl.lit(0, dtype=daily.schema["entries"]).alias("entries"),
        pl.lit(run_id).alias("run_id"),
    )
    return pl.concat([daily, added.select(daily.columns)], how="vertical_relaxed")


def mismatch_rows(found: pl.DataFrame, run_id: str, checked_at: datetime) -> pl.DataFrame:
    """Breakdown findings as ``breakdown_mismatches`` rows: credits of usage, in their own
    columns, so no one adds them to balance movements."""
    return found.select(
        "account",
        "break_id",
        pl.col("break_start").alias("period_start"),
        pl.col("break_end").alias("period_end"),
        "agent_id",
        "campaign_id",
        "channel",
        pl.col("expected_balance").alias("ledger_credits"),
        pl.col("observed_balance").alias("breakdown_credits"),
        pl.col("gap").alias("difference"),
        "detail",
        pl.lit(run_id).alias("run_id"),
        pl.lit(checked_at, dtype=pl.Datetime("us", "UTC")).alias("checked_at"),
    )
