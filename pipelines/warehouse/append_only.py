"""Append-only history: snapshots stored only when they changed, and audit rows as they come.

Snapshot tables keep every distinct state the platform reported, with fetched_at and a content
hash; storing an unchanged snapshot again would only make the history longer, not truer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipelines.warehouse.connection import open_for_write, transaction
from pipelines.warehouse.rows import insert_dicts


def land_snapshot(
    path: Path,
    lock_timeout_s: float,
    table: str,
    account: str,
    content_hash: str,
    rows: Sequence[dict[str, Any]],
) -> bool:
    """Appends ``rows`` unless the latest stored snapshot has the same hash. True if stored."""
    if not rows:
        raise ValueError("a snapshot has at least one row")
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        latest = con.execute(
            f"SELECT content_hash FROM {table} WHERE account = ? ORDER BY fetched_at DESC LIMIT 1",
            [account],
        ).fetchone()
        if latest and latest[0] == content_hash:
            return False
        insert_dicts(con, table, rows)
    return True


def append(
    path: Path, lock_timeout_s: float, tables: Mapping[str, Sequence[dict[str, Any]]]
) -> int:
    """Appends rows (dicts keyed by column) to history tables, all in one transaction: what one
    run records in several tables (an audit's keys and their findings) lands whole or not."""
    if not any(tables.values()):
        return 0
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        return sum(insert_dicts(con, table, rows) for table, rows in tables.items())
