"""Moving a warehouse, whole, into a new one: a file into a lake, or a DuckDB 2.0 export into a
file or a lake this DuckDB writes.

The history a warehouse holds is not all in the platform's API: closed statements and their
restatements, acknowledgements, alerts and their deliveries, key audits. So a warehouse is moved,
never rebuilt by a resync: every table, every row, in one transaction of the target (one lake
snapshot), counted on both sides (docs/lake.md).

The source is a DuckDB file this DuckDB reads (brought to the latest schema first), or a folder
that ``EXPORT DATABASE`` wrote (any DuckDB, such as the 2.0 that wrote a file 1.5 cannot open),
imported into a scratch file first. The target must hold no warehouse rows yet.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipelines.warehouse.connection import DUCKDB_MEMORY_LIMIT, open_for_write, transaction
from pipelines.warehouse.errors import WarehouseError
from pipelines.warehouse.instances import attached
from pipelines.warehouse.lake import lake_at, shown
from pipelines.warehouse.schema import MIGRATIONS
from pipelines.warehouse.sql_text import literal, quote
from pipelines.warehouse.table import Table


@dataclass(frozen=True)
class Moved:
    rows: dict[str, int]  # table: rows moved

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def _tables() -> list[tuple[str, tuple[str, ...]]]:
    """Every table of the latest schema with its columns (views follow from them)."""
    latest: dict[str, Table] = {}
    for migration in MIGRATIONS:
        for table in migration.tables:
            latest[table.name] = table  # a later migration may make a table a view
    return sorted(
        (name, tuple(c.name for c in t.columns)) for name, t in latest.items() if t.kind == "table"
    )


def move(source: Path, target: Path, lock_timeout_s: float) -> Moved:
    """Copies every row of ``source`` (a file, or an EXPORT DATABASE folder) into ``target``
    (a file, or a lake's stand-in), which must hold none; returns the rows per table."""
    if source.is_dir():
        with tempfile.TemporaryDirectory(prefix="creditlens-import-") as scratch:
            imported = Path(scratch) / "imported.duckdb"
            _import_export(source, imported)
            return move(imported, target, lock_timeout_s)
    if not source.exists():
        raise WarehouseError(f"no warehouse at {source}: nothing to move")
    if lake_at(source) is not None:
        raise WarehouseError(
            "the source is a lake: export it with EXPORT DATABASE (FORMAT parquet) and move "
            "the folder"
        )
    if lake_at(target) is None and target.exists():
        raise WarehouseError(f"{target} exists already: move into a new file, or into a lake")
    with open_for_write(source, lock_timeout_s):
        pass  # the source brought to the latest schema, as any command opening it would
    tables = _tables()
    with open_for_write(target, lock_timeout_s) as con:
        already = {name: _count(con, name) for name, _ in tables}
        held = {name: n for name, n in already.items() if n}
        if held:
            raise WarehouseError(
                f"{shown(target)} holds a warehouse already ({sum(held.values())} rows in "
                f"{len(held)} tables): move into an empty one"
            )
        con.execute(f"ATTACH {literal(str(source))} AS moving_source (READ_ONLY)")
        try:
            moved: dict[str, int] = {}
            with transaction(con):
                for name, columns in tables:
                    present = _columns(con, name)
                    picked = ", ".join(quote(c) if c in present else "NULL" for c in columns)
                    listed = ", ".join(quote(c) for c in columns)
                    if present:
                        con.execute(
                            f"INSERT INTO {quote(name)} ({listed}) SELECT {picked} "
                            f"FROM moving_source.main.{quote(name)}"
                        )
                    moved[name] = _count(con, name)
                    expected = _count(con, f"moving_source.main.{quote(name)}") if present else 0
                    if moved[name] != expected:
                        raise WarehouseError(
                            f"{name}: {moved[name]} rows moved of {expected}; nothing was moved"
                        )
        finally:
            con.execute("DETACH moving_source")
    return Moved(moved)


def _count(con: duckdb.DuckDBPyConnection, name: str) -> int:
    row = con.execute(f"SELECT count(*) FROM {name}").fetchone()
    return int(row[0]) if row else 0


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    """The source table's columns; none where the source lacks the table."""
    rows = con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE database_name = 'moving_source' "
        "AND schema_name = 'main' AND table_name = ?",
        [table],
    ).fetchall()
    return {r[0] for r in rows}


def _import_export(folder: Path, into: Path) -> None:
    """An EXPORT DATABASE folder (FORMAT parquet) as a DuckDB file of this DuckDB: its tables
    and their rows. Its views are left out: IMPORT DATABASE replays them in an order where one
    may read another not made yet, and the migrations make every view of the schema anyway."""
    schema = folder / "schema.sql"
    if not schema.is_file():
        raise WarehouseError(
            f"{folder} is not a folder EXPORT DATABASE wrote (it has no schema.sql)"
        )
    statements = [s.strip() for s in schema.read_text().split(";\n") if s.strip()]
    creates = [s for s in statements if s.upper().startswith("CREATE TABLE ")]
    with attached(into, read_only=False, memory_limit=DUCKDB_MEMORY_LIMIT) as con:
        try:
            with transaction(con):
                for create in creates:
                    con.execute(create)
                    name = create[len("CREATE TABLE ") :].split("(", 1)[0].strip().strip('"')
                    data = folder / f"{name}.parquet"
                    if not data.is_file():
                        raise WarehouseError(
                            f"{folder} has no {data.name}: export with (FORMAT parquet)"
                        )
                    con.execute(
                        f"INSERT INTO {quote(name)} SELECT * FROM read_parquet("
                        f"{literal(str(data))})"
                    )
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise WarehouseError(f"cannot import {folder}: {first}") from None
        con.execute("CHECKPOINT")
