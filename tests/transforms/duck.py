"""DuckDB over a polars frame without pyarrow: DuckDB reads any Arrow PyCapsule stream."""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl


class ArrowStream:
    """Hands DuckDB the frame's Arrow C stream (a fresh one each time DuckDB asks)."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.frame.__arrow_c_stream__(requested_schema)


def query(sql: str, **frames: pl.DataFrame) -> list[dict[str, Any]]:
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        for name, frame in frames.items():
            con.register(name, ArrowStream(frame))
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()
