"""Fetching a billing snapshot and landing it when it changed."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from pipelines.api.client import PlatformClient
from pipelines.snapshots.rows import (
    SnapshotRows,
    breakdown_rows,
    campaign_rows,
    consumption_rows,
    subscription_rows,
)
from pipelines.warehouse.writer import Warehouse

log = logging.getLogger(__name__)

ENDPOINTS = {
    "subscription_snapshots": "/Subscription",
    "consumption_snapshots": "/Consumption",
    "breakdown_snapshots": "/Consumption/breakdown",
    "campaigns": "/Campaign",
}


def build_rows(
    table: str,
    doc: Any,
    *,
    account: str,
    run_id: str,
    fetched_at: datetime,
    fields: dict[str, str],
    balance_field: str = "balance",
) -> SnapshotRows:
    base = {"account": account, "fetched_at": fetched_at, "run_id": run_id}
    if table == "subscription_snapshots":
        return subscription_rows(doc, base, fields)
    if table == "consumption_snapshots":
        return consumption_rows(doc, base, fields, balance_field)
    if table == "breakdown_snapshots":
        return breakdown_rows(doc, base, fields)
    if table == "campaigns":
        return campaign_rows(doc, base, fields)
    raise ValueError(f"unknown snapshot table {table}")


def snapshot(
    client: PlatformClient,
    warehouse: Warehouse,
    table: str,
    *,
    account: str,
    run_id: str,
    fields: dict[str, str],
    balance_field: str = "balance",
) -> tuple[SnapshotRows, bool]:
    """Returns the rows and whether they were stored (False: unchanged since the last one)."""
    doc = client.get_json(ENDPOINTS[table])
    rows = build_rows(
        table,
        doc,
        account=account,
        run_id=run_id,
        fetched_at=datetime.now(UTC),
        fields=fields,
        balance_field=balance_field,
    )
    if rows.warning:
        log.warning(rows.warning)
    stored = warehouse.land_snapshot(table, account, rows.content_hash, rows.rows)
    return rows, stored
