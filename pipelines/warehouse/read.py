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
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.lake import lake_at, shown
from pipelines.warehouse.lock import file_lock
from pipelines.warehouse.rows import count

__all__ = [
    "QueryError",
    "ReadConnection",
    "SyncCounts",
    "WarehouseError",
    "count",
    "frame",
    "last_synced_day",
    "ledger_invariants_of",
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
def open_read_only(path: Path, lock_timeout_s: float) -> Iterator[ReadConnection]:
    """``lock_timeout_s``: CREDITLENS_LOCK_TIMEOUT_S (``Settings.lock_timeout_s``), the one
    source of every wait for the warehouse's lock; readers take it from their caller."""
    # A lake's attach says itself that there is no warehouse yet (NoWarehouseYet): no open to ask
    if lake_at(path) is None and not path.exists():
        raise WarehouseError(f"no warehouse at {path}: run `creditlens sync` first")
    with file_lock(path, exclusive=False, timeout_s=lock_timeout_s), connect(path, True) as con:
        yield con


def rows(con: ReadConnection, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Every row a query returns."""
    return con.execute(sql, list(params)).fetchall()


def table_names(con: ReadConnection) -> set[str]:
    """Tables and views present: an older warehouse may lack the newer ones."""
    return {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_catalog = current_database()"
        ).fetchall()
    }


# Every per-account reader answers for many accounts in one connection: an agency's sync asks
# about 50 of them, and opening the file 50 times would cost more than the questions.
_IN = "account IN (SELECT unnest(?::VARCHAR[]))"


def last_synced_days(
    path: Path, accounts: Sequence[str], *, lock_timeout_s: float
) -> dict[str, date]:
    """The last UTC day a finished sync of each account covered; absent before its first."""
    return _days_by_account(path, "sync_runs", _LAST_SYNCED, accounts, lock_timeout_s)


def last_synced_day(path: Path, account: str, *, lock_timeout_s: float) -> date | None:
    """The last UTC day a finished sync of ``account`` covered; None before the first."""
    return last_synced_days(path, [account], lock_timeout_s=lock_timeout_s).get(account)


@dataclass(frozen=True)
class SyncCounts:
    """The invariant's three figures as the last sync of an account recorded them."""

    run_id: str
    fetched: int
    landed: int
    quarantined: int


def _latest_sync_counts(con: ReadConnection, accounts: Sequence[str]) -> dict[str, SyncCounts]:
    found = rows(
        con,
        "SELECT account, arg_max(run_id, finished_at), arg_max(entries_fetched, finished_at), "
        "arg_max(entries_landed, finished_at), arg_max(entries_quarantined, finished_at) "
        f"FROM sync_runs WHERE {_IN} GROUP BY account",
        [list(accounts)],
    )
    return {row[0]: SyncCounts(*row[1:]) for row in found}


def ledger_invariants_of(
    path: Path, accounts: Sequence[str], *, lock_timeout_s: float
) -> tuple[dict[str, SyncCounts], dict[str, int]]:
    """Per account, the invariant's figures as its last sync recorded them, and how many rows
    repeat an (account, entry_id) (zero while the identity rule holds): the ledger's checks ask
    both after every sync, in one connection."""
    with open_read_only(path, lock_timeout_s) as con:
        return _latest_sync_counts(con, accounts), _duplicate_entry_ids(con, accounts)


def _duplicate_entry_ids(con: ReadConnection, accounts: Sequence[str]) -> dict[str, int]:
    found = dict(
        rows(
            con,
            "SELECT account, count(*) - count(DISTINCT entry_id) FROM ledger_entries "
            f"WHERE {_IN} GROUP BY account",
            [list(accounts)],
        )
    )
    return {account: int(found.get(account, 0)) for account in accounts}


def _days_by_account(
    path: Path, table: str, sql: str, accounts: Sequence[str], lock_timeout_s: float
) -> dict[str, date]:
    """``sql`` (``account, day`` rows, filtered by ``_IN``) over ``table``, which may not exist
    yet: nothing is known then, nor without a warehouse; an account whose day is NULL is left
    out."""
    return _many_days_by_account(path, [(table, sql)], accounts, lock_timeout_s)[0]


def _many_days_by_account(
    path: Path, queries: Sequence[tuple[str, str]], accounts: Sequence[str], lock_timeout_s: float
) -> list[dict[str, date]]:
    """Several ``_days_by_account`` questions in one connection: opening the file (a new DuckDB
    instance, its catalog read) costs more than each of these questions."""
    if not warehouse_exists(path):
        return [{} for _ in queries]
    try:
        with open_read_only(path, lock_timeout_s) as con:
            present = table_names(con)
            found = [
                rows(con, sql, [list(accounts)]) if table in present else []
                for table, sql in queries
            ]
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot read {shown(path)}: {exc}") from None
    return [{account: day for account, day in each if day is not None} for each in found]


def recorded_first_days(
    path: Path, accounts: Sequence[str], *, lock_timeout_s: float
) -> dict[str, date]:
    """The first day history discovery found for each account; absent before any discovery."""
    return _days_by_account(path, "ledger_history", _FIRST_FOUND, accounts, lock_timeout_s)


def recorded_first_day(path: Path, account: str, *, lock_timeout_s: float) -> date | None:
    """The first day history discovery found for ``account``; None before any discovery."""
    return recorded_first_days(path, [account], lock_timeout_s=lock_timeout_s).get(account)


@dataclass(frozen=True)
class SyncStart:
    """What a sync asks of the warehouse before it starts, per account."""

    last_synced: dict[str, date]  # ``last_synced_days``
    first_found: dict[str, date]  # ``recorded_first_days``
    # Accounts whose latest history discovery was decided by the older rule's "opens at zero"
    # (it stopped at an empty window, which a quiet period at zero also shows), with the first
    # day it recorded: they are probed again, once, since what preceded the silence may be
    # missing.
    cut_short: dict[str, date]


def sync_start(path: Path, accounts: Sequence[str], *, lock_timeout_s: float) -> SyncStart:
    """The three questions a sync asks before discovery, in one connection: each open of the
    warehouse costs more than the three questions (on a lake, a catalog round trip)."""
    return SyncStart(
        *_many_days_by_account(
            path,
            [("sync_runs", _LAST_SYNCED), ("ledger_history", _FIRST_FOUND),
             ("ledger_history", _CUT_SHORT)],
            accounts,
            lock_timeout_s,
        )
    )  # fmt: skip


_LAST_SYNCED = f"SELECT account, max(range_end) FROM sync_runs WHERE {_IN} GROUP BY account"
_CUT_SHORT = (
    "SELECT account, arg_max(first_day, discovered_at) FROM ledger_history "
    f"WHERE {_IN} GROUP BY account HAVING arg_max(decided_by, discovered_at) = 'opens_at_zero'"
)
_FIRST_SYNCED = f"SELECT account, min(range_start) FROM sync_runs WHERE {_IN} GROUP BY account"
_FIRST_FOUND = (
    "SELECT account, arg_max(first_day, discovered_at) FROM ledger_history "
    f"WHERE {_IN} AND first_day IS NOT NULL GROUP BY account"
)


def first_synced_days(
    path: Path, accounts: Sequence[str], *, lock_timeout_s: float
) -> dict[str, date]:
    """The first UTC day any finished sync of each account covered (a ``--since`` may reach
    before the discovered first day): the ledger's partitions must cover it."""
    return _days_by_account(path, "sync_runs", _FIRST_SYNCED, accounts, lock_timeout_s)


def first_days(
    path: Path, accounts: Sequence[str], *, lock_timeout_s: float
) -> tuple[dict[str, date], dict[str, date]]:
    """``recorded_first_days`` and ``first_synced_days`` in one connection: the ledger's
    partitions ask both each time the definitions are built."""
    found, synced = _many_days_by_account(
        path, [("ledger_history", _FIRST_FOUND), ("sync_runs", _FIRST_SYNCED)], accounts,
        lock_timeout_s,
    )  # fmt: skip
    return found, synced
