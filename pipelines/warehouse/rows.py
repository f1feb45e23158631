"""Inserting rows into a table inside an open transaction: the one way every writer does it.

Rows arrive either as dicts keyed by column (history tables, run records) or as polars frames
(derived tables). Both are inserted by column name, never by position, so a column added to a
table later cannot shift values into the wrong place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import polars as pl


def insert_dicts(con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[dict[str, Any]]) -> int:
    """Inserts dict rows (all with the first row's keys); returns how many."""
    if not rows:
        return 0
    names = list(rows[0])
    marks = ", ".join("?" for _ in names)
    con.executemany(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})",
        [[row[c] for c in names] for row in rows],
    )
    return len(rows)


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, rows: pl.DataFrame) -> int:
    """Inserts a frame's rows by column name; returns how many."""
    if not rows.height:
        return 0
    columns = ", ".join(rows.columns)
    # Read by name (a replacement scan), not register(): inside a transaction a registered name
    # keeps its data alive until COMMIT, even once unregistered. The frame's own Arrow stream
    # avoids a pyarrow copy of every slice.
    incoming = _ArrowStream(rows)  # noqa: F841
    con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM incoming")
    return rows.height


class _ArrowStream:
    """A polars frame as an Arrow PyCapsule stream, which DuckDB scans without pyarrow."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.frame.__arrow_c_stream__(requested_schema)


def count(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] = ()) -> int:
    """The single integer a COUNT query returns (0 for no row or NULL)."""
    row = con.execute(sql, list(params)).fetchone()
    return int(row[0]) if row and row[0] is not None else 0
