"""The one way to read the warehouse: a read-only connection under the shared lock.

Readers (the report site, the CLI, the audit, Dagster checks) open the warehouse here and only
here; nothing they hold can write. The lock is shared, so readers never block each other, and
held only for the read. The questions the pipeline itself asks of the warehouse are named
functions below, so no caller spells SQL against the pipeline's bookkeeping tables.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import duckdb

from pipelines.warehouse.connection import WarehouseError, connect, frame
from pipelines.warehouse.lock import file_lock
from pipelines.warehouse.rows import count

__all__ = [
    "QueryError",
    "ReadConnection",
    "SyncCounts",
    "WarehouseError",
    "count",
    "duplicate_entry_ids",
    "frame",
    "last_synced_day",
    "latest_sync_counts",
    "open_read_only",
    "recorded_first_day",
    "rows",
    "table_names",
]

# What a reader holds: DuckDB's connection, opened read-only (writes fail inside DuckDB).
ReadConnection = duckdb.DuckDBPyConnection
# What a query against an older warehouse (a view it lacks) raises.
QueryError = duckdb.Error


@contextmanager
def open_read_only(path: Path, lock_timeout_s: float = 600.0) -> Iterator[ReadConnection]:
    if not path.exists():
        raise WarehouseError(f"no warehouse at {path}: run `creditlens sync` first")
    with file_lock(path, exclusive=False, timeout_s=lock_timeout_s):
        con = connect(path, read_only=True)
        try:
            yield con
        finally:
            con.close()


def rows(con: ReadConnection, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Every row a query returns."""
    return con.execute(sql, list(params)).fetchall()


def table_names(con: ReadConnection) -> set[str]:
    """Tables and views present: an older warehouse may lack the newer ones."""
    return {
        r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }


def last_synced_day(path: Path, account: str) -> date | None:
    """The last UTC day a finished sync of ``account`` covered; None before the first."""
    with open_read_only(path) as con:
        if "sync_runs" not in table_names(con):
            return None
        row = con.execute(
            "SELECT max(range_end) FROM sync_runs WHERE account = ?", [account]
        ).fetchone()
    return row[0] if row and row[0] is not None else None


@dataclass(frozen=True)
class SyncCounts:
    """The invariant's three figures as the last sync of an account recorded them."""

    run_id: str
    fetched: int
    landed: int
    quarantined: int


def latest_sync_counts(path: Path, account: str) -> SyncCounts | None:
    with open_read_only(path) as con:
        row = con.execute(
            "SELECT run_id, entries_fetched, entries_landed, entries_quarantined FROM sync_runs "
            "WHERE account = ? ORDER BY finished_at DESC LIMIT 1",
            [account],
        ).fetchone()
    return SyncCounts(*row) if row else None


def duplicate_entry_ids(path: Path, account: str) -> int:
    """How many rows repeat an (account, entry_id): zero while the identity rule holds."""
    with open_read_only(path) as con:
        return count(
            con,
            "SELECT count(*) - count(DISTINCT entry_id) FROM ledger_entries WHERE account = ?",
            [account],
        )


def recorded_first_day(path: Path, account: str) -> date | None:
    """The first day history discovery found for ``account``; None before any discovery."""
    if not path.exists():
        return None
    try:
        with open_read_only(path, lock_timeout_s=5.0) as con:
            if "ledger_history" not in table_names(con):
                return None
            row = con.execute(
                "SELECT first_day FROM ledger_history WHERE account = ? AND first_day IS NOT NULL "
                "ORDER BY discovered_at DESC LIMIT 1",
                [account],
            ).fetchone()
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot read {path}: {exc}") from None
    return row[0] if row else None
