"""Reading the alerts view: one reader for the CLI, the report site and Dagster's checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.read import ReadConnection, open_read_only, rows, table_names

ALERT_COLUMNS = (
    "alert_id, rule, kind, account, dimension_value, state, measured, threshold, severity, "
    "evidence, since, changed_at, acknowledged, ack_reason, delivered, pending"
)


def read_alerts(
    path: Path, lock_timeout_s: float, *, everything: bool, account: str | None
) -> list[dict[str, Any]]:
    """The alerts view, open ones (firing, not acknowledged) unless ``everything``."""
    if not warehouse_exists(path):
        return []
    with open_read_only(path, lock_timeout_s) as con:
        return alerts_of(con, everything=everything, account=account)


def alerts_of(
    con: ReadConnection, *, everything: bool, account: str | None
) -> list[dict[str, Any]]:
    """``read_alerts`` on an open connection; none in a warehouse older than the view (baseline
    rows, seen and never sent, only with ``everything``)."""
    if "alerts" not in table_names(con):
        return []
    where = ["state <> 'baseline'"] if not everything else ["true"]
    if not everything:
        where.append("state = 'firing' AND NOT acknowledged")
    params: list[Any] = []
    if account:
        where.append("account = ?")
        params.append(account)
    found = rows(
        con,
        f"SELECT {ALERT_COLUMNS} FROM alerts WHERE {' AND '.join(where)} "
        "ORDER BY account, changed_at DESC, alert_id",
        params,
    )
    names = [c.strip() for c in ALERT_COLUMNS.split(",")]
    return [dict(zip(names, row, strict=True)) for row in found]
