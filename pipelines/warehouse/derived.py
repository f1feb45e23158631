"""Derived tables (breaks, daily balances, the enriched ledger), replaced per account.

A reconciliation stages each account's rows beforehand (Parquet files and a few small rows),
then `commit_derived` writes every account in ONE transaction: each account's rows are deleted
from its boundary on (all of them for a full pass) and its staged rows inserted. Other accounts
are untouched and a reader never sees a mix of two runs. DuckDB has no savepoints, so an account
is validated (`validate_staged`) before the transaction and left out if it fails: its rows stay
those of its previous run.

`replacing_for_account` is the older one-account form (delete all, insert in the block), kept for
readers and tests that want a read inside the writer's lock.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.warehouse.connection import frame, open_for_write, transaction
from pipelines.warehouse.instances import limit_memory
from pipelines.warehouse.landing import paths_sql
from pipelines.warehouse.read import open_read_only
from pipelines.warehouse.rows import insert_dicts, insert_frame
from pipelines.warehouse.schema import all_tables

# Each derived table's rows from a boundary on (`s.since`, midnight UTC; NULL for a full pass:
# every row): what an incremental reconciliation rewrites. A movement after the last entry
# (break_end null) and the breakdown's mismatches are always the latest run's; the opening stays
# with the first entry.
TAIL_PREDICATES: dict[str, str] = {
    "ledger_chain": "created_at >= s.since",
    "daily_balance": "day >= CAST(s.since AS DATE)",
    "balance_breaks": "(break_end IS NULL OR break_end >= s.since)",
    "breakdown_mismatches": "true",
    "ambiguous_tie_days": "day >= CAST(s.since AS DATE)",
}
# Every staged account with its boundary, as the rows `s` of a DELETE ... USING.
_BOUNDARIES = "(SELECT unnest(?::VARCHAR[]) AS account, unnest(?::TIMESTAMPTZ[]) AS since) AS s"
REPLACED_ROWS = ("reconciliation_carry",)  # one row per account, replaced whole
APPENDED_ROWS = ("reconciliation_runs",)


class StagedInvalid(ValueError):
    """An account's staged rows do not fit the warehouse: it is left out of the commit."""


@dataclass(frozen=True)
class StagedDerived:
    """One account's derived rows, ready to commit. `since` None: a full pass (every row of the
    account is replaced); else its rows from that instant (midnight UTC) on."""

    account: str
    since: datetime | None
    files: Mapping[str, Sequence[Path]] = field(default_factory=dict)
    rows: Mapping[str, Sequence[dict[str, Any]]] = field(default_factory=dict)


def validate_staged(staged: StagedDerived) -> None:
    """Every staged file and row names a derived table and only its columns, with every
    NOT NULL column present: what would fail inside the transaction fails here instead."""
    declared = {t.name: t for t in all_tables() if t.kind == "table"}
    for table, paths in staged.files.items():
        if table not in TAIL_PREDICATES:
            raise StagedInvalid(f"{table} is not a derived table")
        for path in paths:
            names = list(pl.read_parquet_schema(path))
            _check_columns(declared[table], names, staged.account)
    for table, rows in staged.rows.items():
        if table not in (*REPLACED_ROWS, *APPENDED_ROWS):
            raise StagedInvalid(f"{table} is not a reconciliation record")
        for row in rows:
            _check_columns(declared[table], list(row), staged.account)
            if row.get("account") != staged.account:
                raise StagedInvalid(f"a {table} row of account {staged.account} names another")


def _check_columns(table: Any, names: list[str], account: str) -> None:
    known = {c.name for c in table.columns}
    required = {c.name for c in table.columns if c.not_null}
    unknown, missing = set(names) - known, required - set(names)
    if unknown or missing:
        raise StagedInvalid(
            f"account {account}: staged {table.name} rows do not fit the table "
            f"(unknown columns {sorted(unknown)}, missing {sorted(missing)})"
        )


def commit_derived(
    path: Path,
    lock_timeout_s: float,
    accounts: Sequence[StagedDerived],
    memory_limit: str | None = None,
    failed: Sequence[str] = (),
) -> None:
    """Every account's staged rows in one transaction (validated first by the caller). The
    carry of each `failed` account is marked failed in the same transaction: its rows stay as
    they were, and its next reconciliation is a full one."""
    if not accounts and not failed:
        return
    with open_for_write(path, lock_timeout_s) as con:
        _limit_memory(con, memory_limit)
        with transaction(con):
            _replace(con, accounts)
            for account in failed:
                con.execute(
                    "UPDATE reconciliation_carry SET mode = 'failed', "
                    "reason = 'the last reconciliation failed' WHERE account = ?",
                    [account],
                )


# Staged files read by one INSERT: its readers' state is held at once, and the rows are as many
# either way. On DuckDB 1.5.5 an agency's daily commit at the reconciliation's own 64MB ran out
# reading 500 companies' tails in one INSERT, and 100 (measured on the 500-company benchmark's
# warehouse: every company failed); 50 and 25 commit it, in 8.8 and 8.6 s of the whole pass.
FILES_PER_INSERT = 50


def _replace(con: duckdb.DuckDBPyConnection, accounts: Sequence[StagedDerived]) -> None:
    """Every account's tail deleted, then every account's staged rows inserted: a few
    statements per table whatever the number of accounts (one per account made a daily sync of
    500 companies thousands of statements)."""
    if not accounts:
        return
    names = [staged.account for staged in accounts]
    boundaries = [staged.since for staged in accounts]
    for table, predicate in TAIL_PREDICATES.items():
        con.execute(
            f"DELETE FROM {table} USING {_BOUNDARIES} WHERE {table}.account = s.account "
            f"AND (s.since IS NULL OR {predicate})",
            [names, boundaries],
        )
    files: dict[str, list[Path]] = {}
    for staged in accounts:
        for table, paths in staged.files.items():
            files.setdefault(table, []).extend(paths)
    for table, paths in files.items():
        if paths:
            columns = ", ".join(pl.read_parquet_schema(paths[0]))
            for start in range(0, len(paths), FILES_PER_INSERT):
                group = paths[start : start + FILES_PER_INSERT]
                con.execute(
                    f"INSERT INTO {table} ({columns}) SELECT {columns} "
                    f"FROM read_parquet({paths_sql(group)}, union_by_name = true)"
                )
    for table in REPLACED_ROWS:
        replaced = [staged.account for staged in accounts if staged.rows.get(table)]
        if replaced:
            con.execute(
                f"DELETE FROM {table} WHERE account IN (SELECT unnest(?::VARCHAR[]))", [replaced]
            )
    rows: dict[str, list[dict[str, Any]]] = {}
    for staged in accounts:
        for table, these in staged.rows.items():
            rows.setdefault(table, []).extend(these)
    for table, these in rows.items():
        insert_dicts(con, table, these)


def _limit_memory(con: duckdb.DuckDBPyConnection, memory_limit: str | None) -> None:
    """`memory_limit` (DuckDB's syntax, e.g. '128MB') lowers DuckDB's limit for this connection
    only: rows inserted in a transaction stay in DuckDB's buffers up to the limit."""
    if memory_limit is not None:
        limit_memory(con, memory_limit)


class AccountReplacement:
    """Reads and inserts inside `replacing_for_account`'s transaction.

    The block reads through the same connection because the exclusive lock shuts out any other.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def read(self, sql: str, params: list[Any] | None = None) -> pl.DataFrame:
        return frame(self.con, sql, params)

    def insert(self, table: str, rows: pl.DataFrame) -> None:
        insert_frame(self.con, table, rows)

    def append(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        insert_dicts(self.con, table, rows)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        """A statement on the account's rows inside the transaction."""
        self.con.execute(sql, list(params))


@contextmanager
def replacing_for_account(
    path: Path,
    lock_timeout_s: float,
    account: str,
    tables: Sequence[str],
    memory_limit: str | None = None,
) -> Iterator[AccountReplacement]:
    """The account's rows of `tables` are deleted, then whatever the block inserts lands in the
    same transaction (all or nothing: an exception rolls everything back)."""
    with open_for_write(path, lock_timeout_s) as con:
        _limit_memory(con, memory_limit)
        with transaction(con):
            for table in tables:
                con.execute(f"DELETE FROM {table} WHERE account = ?", [account])
            yield AccountReplacement(con)


@contextmanager
def reading(
    path: Path, lock_timeout_s: float, memory_limit: str | None = None
) -> Iterator[AccountReplacement]:
    """A read-only connection under the shared lock, for staging: reads only (DuckDB refuses
    writes on it), with the same memory bound as the commit."""
    with open_read_only(path, lock_timeout_s) as con:
        _limit_memory(con, memory_limit)
        yield AccountReplacement(con)
