"""Real warehouses holding hand-built ledgers and snapshots, and their derived tables read back.

The ledger frames come from `tests.transforms.ledgers` (the landed shape); landing fills the
bookkeeping columns a sync would write, so `reconcile_account` reads them as it reads a sync's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import polars as pl

from pipelines.warehouse.read import open_read_only
from pipelines.warehouse.writer import Warehouse

FETCHED_AT = datetime(2030, 1, 1, tzinfo=UTC)

SNAPSHOT_TABLES = (
    "consumption_snapshots",
    "breakdown_snapshots",
    "subscription_snapshots",
    "campaigns",
)
DERIVED_QUERIES = {
    "balance_breaks": "SELECT * EXCLUDE (run_id, checked_at) FROM balance_breaks "
    "WHERE account = ? ORDER BY ALL",
    "daily_balance": "SELECT * EXCLUDE (run_id) FROM daily_balance WHERE account = ? ORDER BY ALL",
    "ledger_enriched": "SELECT * FROM ledger_enriched WHERE account = ? ORDER BY chain_position",
    "reconciliation_runs": "SELECT * EXCLUDE (run_id, checked_at) FROM reconciliation_runs "
    "WHERE account = ? AND run_id = ?",
}


def land_ledger(warehouse: Warehouse, ledger: pl.DataFrame) -> None:
    account = ledger["account"][0]
    rows = ledger.with_columns(
        entry_day=pl.col("created_at").dt.date(),
        extra=pl.lit(None, dtype=pl.Utf8),
        fingerprint=pl.col("entry_id"),
        occurrence=pl.lit(1, dtype=pl.Int32),
        run_id=pl.lit("landed"),
        fetched_at=pl.lit(FETCHED_AT, dtype=pl.Datetime("us", "UTC")),
        window_start=pl.col("created_at").dt.date(),
        window_end=pl.col("created_at").dt.date(),
        page_number=pl.lit(1, dtype=pl.Int32),
        page_position=pl.int_range(pl.len(), dtype=pl.Int32),
    )
    warehouse.replace_for_account(account, {"ledger_entries": rows})


def land_snapshots(
    warehouse: Warehouse,
    account: str,
    *,
    balance: Decimal | None,
    period: tuple[datetime, datetime] | None,
    items: Sequence[tuple[str | None, str | None, str | None, Decimal]] = (),
    plans: Sequence[tuple[datetime, str]] = (),
    campaigns: Sequence[tuple[str, str]] = (),
) -> None:
    """The summary, breakdown, subscription history and campaign names of `account`, replacing
    any it had."""
    warehouse.replace_for_account(account, {table: pl.DataFrame() for table in SNAPSHOT_TABLES})
    common = {"account": account, "content_hash": "h", "shape_ok": True, "run_id": "landed"}
    if balance is not None:
        warehouse.append(
            "consumption_snapshots",
            [{**common, "fetched_at": FETCHED_AT, "balance": balance, "raw_json": "{}"}],
        )
    if period is not None:
        rows = [
            {
                **common,
                "fetched_at": FETCHED_AT,
                "period_start": period[0],
                "period_end": period[1],
                "item_index": index,
                "agent_id": agent,
                "campaign_id": campaign,
                "channel": channel,
                "credits": credits,
                "raw_json": "{}",
            }
            for index, (agent, campaign, channel, credits) in enumerate(items)
        ]
        if not rows:  # an empty breakdown is one row without an item
            rows = [{**common, "fetched_at": FETCHED_AT, "period_start": period[0],
                     "period_end": period[1], "item_index": None, "raw_json": "{}"}]  # fmt: skip
        warehouse.append("breakdown_snapshots", rows)
    if plans:
        warehouse.append(
            "subscription_snapshots",
            [
                {**common, "fetched_at": at, "plan": plan, "status": "Active", "raw_json": "{}"}
                for at, plan in plans
            ],
        )
    if campaigns:
        warehouse.append(
            "campaigns",
            [
                {
                    **common,
                    "fetched_at": FETCHED_AT,
                    "campaign_id": cid,
                    "name": name,
                    "raw_json": json.dumps({"id": cid}),
                }
                for cid, name in campaigns
            ],
        )


def derived_tables(warehouse: Warehouse, account: str, run_id: str) -> dict[str, list[Any]]:
    """Everything a reconciliation wrote for `account`, in a canonical order."""
    found: dict[str, list[Any]] = {}
    with open_read_only(warehouse.path) as con:
        for table, sql in DERIVED_QUERIES.items():
            params = [account, run_id] if table == "reconciliation_runs" else [account]
            found[table] = con.execute(sql, params).fetchall()
    return found
