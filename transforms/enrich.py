"""The ledger with the context it happened in: the subscription then, the campaign's name.

Snapshots are taken when creditlens syncs, not when entries happen, so an entry takes the latest
snapshot fetched at or before its createdAt. Before the first snapshot the plan is unknown: the
first snapshot's plan carried back would hide a plan change made before the first sync, so those
entries get null plan and status and say so in `subscription_backfilled`.
"""

from __future__ import annotations

import polars as pl

_UTC_MICROS = pl.Datetime("us", "UTC")


def ledger_enriched(
    ledger: pl.DataFrame, subscription_snapshots: pl.DataFrame, campaigns: pl.DataFrame
) -> pl.DataFrame:
    """`ledger` in its own row order plus `plan`, `status`, `subscription_backfilled` and
    `campaign_name`.

    `subscription_snapshots`: account, fetched_at Datetime(us, UTC), plan, status.
    `campaigns`: account, campaign_id, name (latest names; a repeated id keeps its last row).
    An account without any snapshot gets null plan and status and `subscription_backfilled`
    False; an entry without campaign (or an unknown one) gets a null `campaign_name`.
    """
    # The lookups run on a narrow frame (row, account, campaign, time) and are stacked back onto
    # the ledger in its own order: sorting and joining every column of the ledger would copy it
    # several times over.
    entries = ledger.select(
        pl.int_range(pl.len(), dtype=pl.UInt32).alias("__row"),
        "account",
        "campaign_id",
        pl.col("created_at").cast(_UTC_MICROS).alias("__at"),
    )
    snapshots = (
        subscription_snapshots.select(
            "account",
            pl.col("fetched_at").cast(_UTC_MICROS).alias("__at"),
            "plan",
            "status",
            pl.lit(True).alias("__observed"),
        )
        .drop_nulls("__at")
        .sort("__at")
    )
    earliest = snapshots.select("account").unique().with_columns(__has_snapshot=pl.lit(True))
    as_of = entries.sort("__at").join_asof(
        snapshots, on="__at", by="account", strategy="backward", check_sortedness=False
    )
    names = campaigns.select(
        "account", "campaign_id", pl.col("name").alias("campaign_name")
    ).unique(subset=["account", "campaign_id"], keep="last", maintain_order=True)
    observed = pl.col("__observed").fill_null(False)
    found = (
        as_of.join(earliest, on="account", how="left")
        .with_columns(
            plan=pl.when(observed).then(pl.col("plan")),
            status=pl.when(observed).then(pl.col("status")),
            subscription_backfilled=~observed & pl.col("__has_snapshot").fill_null(False),
        )
        .join(names, on=["account", "campaign_id"], how="left")
        .sort("__row")
    )
    return ledger.hstack(found.select("plan", "status", "subscription_backfilled", "campaign_name"))
