"""Inserting rows into a table inside an open transaction: the one way every writer does it.

Rows arrive either as dicts keyed by column (history tables, run records) or as polars frames
(derived tables). Both are inserted by column name, never by position, so a column added to a
table later cannot shift values into the wrong place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from functools import cache
from typing import Any

import duckdb
import polars as pl

from pipelines.warehouse.schema import all_tables
from pipelines.warehouse.sql_text import quote

# Rows per INSERT statement: DuckDB's executemany runs one statement per row (5,000 rows of five
# columns took 5.1 s here; the same in statements of 1,000 rows, 0.34 s).
ROWS_PER_STATEMENT = 1000


def insert_dicts(con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[dict[str, Any]]) -> int:
    """Inserts dict rows (all with the first row's keys); returns how many. Each value is cast
    to its column's type, as a one-row insert would: a VALUES list of many rows would otherwise
    give each column one type for all its rows first."""
    if not rows:
        return 0
    names = list(rows[0])
    types = _declared_types(table)
    if not all(c in types for c in names):  # a table the schema does not declare: ask DuckDB
        types = dict(
            con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                "AND schema_name = current_schema()",
                [table],
            ).fetchall()
        )
    texts = _as_texts(rows, names) if all(SCALAR.match(types[c]) for c in names) else None
    if texts is not None:
        # Every value as its exact text, cast by DuckDB to its column's type in one statement:
        # a VALUES list binds each of its parameters (20,000 snapshot rows took 10.2 s that way,
        # 0.27 s this way), and the text of a Decimal, a datetime or a float casts to exactly
        # the value the parameter would (tests/pipeline/test_rows.py).
        frame = pl.DataFrame(texts, schema=dict.fromkeys(names, pl.String))
        incoming = _ArrowStream(frame)  # noqa: F841  (read by name below)
        casts = ", ".join(f"CAST({quote(c)} AS {types[c]})" for c in names)
        con.execute(
            f"INSERT INTO {table} ({', '.join(quote(c) for c in names)}) SELECT {casts} "
            "FROM incoming"
        )
        return len(rows)
    row_marks = "(" + ", ".join(f"CAST(? AS {types[c]})" for c in names) + ")"
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        chunk = rows[start : start + ROWS_PER_STATEMENT]
        con.execute(
            f"INSERT INTO {table} ({', '.join(names)}) VALUES "
            + ", ".join(row_marks for _ in chunk),
            [row[c] for row in chunk for c in names],
        )
    return len(rows)


# Column types whose values travel as text and are cast back exactly (lists, structs, blobs and
# intervals keep the parameter path).
SCALAR = re.compile(
    r"^(VARCHAR|BOOLEAN|DATE|TIMESTAMP|TIMESTAMP WITH TIME ZONE|TIMESTAMPTZ|DOUBLE|FLOAT|REAL|"
    r"U?(TINYINT|SMALLINT|INTEGER|BIGINT)|HUGEINT|DECIMAL\(\d+,\s*\d+\))$"
)


def as_text(value: Any) -> str | None:
    """A value's exact text for a cast, or raises TypeError for a kind that has none here."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")  # never an exponent
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float):
        return repr(value)  # the shortest text that reads back as the same double
    if isinstance(value, int):
        return str(value)
    raise TypeError(type(value).__name__)


def _as_texts(
    rows: Sequence[dict[str, Any]], names: list[str]
) -> dict[str, list[str | None]] | None:
    """Each column's values as text; None when one has no exact text (the parameter path)."""
    try:
        return {c: [as_text(row[c]) for row in rows] for c in names}
    except TypeError:
        return None


@cache
def _declared_types(table: str) -> dict[str, str]:
    """Each column's SQL type as the schema declares it (pipelines/warehouse/schema.py): the
    types every warehouse has, read without a catalog query per insert (3 ms each)."""
    for declared in all_tables():
        if declared.name == table and declared.kind == "table":
            return {c.name: c.type for c in declared.columns}
    return {}


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
