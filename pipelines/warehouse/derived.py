"""Derived tables (breaks, daily balances, the enriched ledger), replaced per account.

They are rebuilt whole on each reconciliation: replacing one account's rows in one transaction
keeps other accounts untouched, and a reader never sees a mix of two runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.warehouse.connection import frame, open_for_write, transaction
from pipelines.warehouse.rows import insert_dicts, insert_frame


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
        """A statement on the account's rows inside the transaction (an update of a row the
        block inserted, say)."""
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
    same transaction (all or nothing: an exception rolls everything back).

    Results too large to hold at once arrive in parts. `memory_limit` (DuckDB's syntax, e.g.
    '128MB') lowers DuckDB's limit for this connection only: rows inserted in a transaction stay
    in DuckDB's buffers up to the limit, so a large transaction written in parts would otherwise
    grow to it.
    """
    with open_for_write(path, lock_timeout_s) as con:
        if memory_limit is not None:
            if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]?i?B", memory_limit):
                raise ValueError(f"not a DuckDB memory size: {memory_limit!r}")
            con.execute(f"SET memory_limit = '{memory_limit}'")
        with transaction(con):
            for table in tables:
                con.execute(f"DELETE FROM {table} WHERE account = ?", [account])
            yield AccountReplacement(con)
