"""Opening the warehouse to write: the lock, the migrations, transactions.

Readers open it through pipelines/warehouse/read.py instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import duckdb
import polars as pl

from pipelines.warehouse.disk import disk_full, is_disk_full
from pipelines.warehouse.empty import copy_of_empty
from pipelines.warehouse.errors import WarehouseError, cannot_open
from pipelines.warehouse.instances import DUCKDB_MEMORY_LIMIT_ENV, attached, capped
from pipelines.warehouse.lake import lake_at, shown
from pipelines.warehouse.lock import file_lock
from pipelines.warehouse.schema import MIGRATIONS, SCHEMA_VERSION, Migration

__all__ = ["WarehouseError", "connect", "frame", "migrate", "open_for_write", "transaction"]


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """0 for a new file. Asked of the table itself: looking it up in the catalog first took four
    times as long, on every open for write."""
    try:
        row = con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    except duckdb.CatalogException:
        return 0
    return int(row[0]) if row else 0


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """All or nothing: COMMIT when the block ends, ROLLBACK if anything escapes it."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def apply_migration(
    con: duckdb.DuckDBPyConnection, migration: Migration, lake: bool = False
) -> None:
    """One migration, all or nothing."""
    apply_migrations(con, [migration], lake)


def apply_migrations(
    con: duckdb.DuckDBPyConnection, migrations: Sequence[Migration], lake: bool = False
) -> None:
    """The migrations in order, in ONE transaction: none of them is left half applied.
    ``lake``: a DuckLake 1.0 catalog keeps no comment on a view's columns (it refuses one), so
    those are left out there; docs/data-dictionary.md is generated from the schema, not from the
    database, and says them all."""
    with transaction(con):
        for migration in migrations:
            # One call per migration: a round trip per statement (some 700 for a new
            # warehouse, most of them comments) was most of a first sync's time in the
            # warehouse.
            con.execute(";\n".join(_script(migration, lake)))
            con.execute(
                "INSERT INTO schema_version VALUES (?, ?, now())",
                [migration.version, migration.description],
            )


def _script(migration: Migration, lake: bool) -> list[str]:
    # Statements first: they alter what exists, and a migration's new views may read it.
    script = [
        SCHEMA_VERSION.create_sql(),
        *SCHEMA_VERSION.comment_sql(),
        *migration.statements,
        *(table.create_sql() for table in migration.tables),
        *(statement for table in migration.tables for statement in table.comment_sql()),
    ]
    if lake:
        script = [statement for statement in script if not _comments_a_view_column(statement)]
    return script


_VIEWS = {t.name for m in MIGRATIONS for t in m.tables if t.kind == "view"}
_COLUMN_COMMENT = re.compile(r"\s*COMMENT ON COLUMN (\w+)\.", re.IGNORECASE)


def _comments_a_view_column(statement: str) -> bool:
    found = _COLUMN_COMMENT.match(statement)
    return bool(found and found[1] in _VIEWS)


def migrate(con: duckdb.DuckDBPyConnection, up_to: int | None = None, lake: bool = False) -> int:
    """Upgrades in place, in order; returns the version reached.

    A new warehouse gets every migration in one transaction: on a lake each commit is a catalog
    transaction in PostgreSQL, and 18 of them were 1.07 s of a first sync's open, one 0.17 s
    (the same tables, columns, comments and views; tests/lake/test_lake.py). An existing one is
    upgraded a migration per transaction, so a step that rewrites a large table commits before
    the next one starts."""
    version = current_version(con)
    latest = MIGRATIONS[-1].version
    if version > latest:
        raise WarehouseError(
            f"the warehouse is at schema version {version}, newer than this creditlens "
            f"understands ({latest}); upgrade creditlens"
        )
    due = [m for m in MIGRATIONS if version < m.version <= (up_to or latest)]
    if not due:
        return version
    if version == 0:
        apply_migrations(con, due, lake)
    else:
        for migration in due:
            apply_migration(con, migration, lake)
    return due[-1].version


DUCKDB_MEMORY_LIMIT = "512MB"


@contextmanager
def connect(path: Path, read_only: bool) -> Iterator[duckdb.DuckDBPyConnection]:
    """The warehouse attached to a warm DuckDB instance (pipelines/warehouse/instances.py) for
    the block; the caller holds the file lock around it."""
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        try:
            # A sync must fit beside other work: DuckDB spills past this, not at 80% of RAM.
            con = stack.enter_context(
                attached(path, read_only=read_only, memory_limit=DUCKDB_MEMORY_LIMIT)
            )
        except (duckdb.Error, OSError) as exc:
            if is_disk_full(exc):
                raise disk_full(path, "nothing was changed") from None
            if _NEWER_FORMAT.search(str(exc)):
                raise WarehouseError(newer_format(path)) from None
            raise cannot_open(shown(path), exc) from None
        yield con


# DuckDB's words for a file of a storage format it does not know: a newer DuckDB wrote it.
_NEWER_FORMAT = re.compile(r"created with an? newer version of DuckDB|version number \d+, but we")


def newer_format(path: Path) -> str:
    """What to do with a warehouse a newer DuckDB wrote (2.0 writes files 1.5 cannot read): its
    history (closes, acknowledgements, alerts) is not all in the API, so it is moved, not
    resynced, unless that history may go (docs/lake.md#a-warehouse-duckdb-20-wrote)."""
    return (
        f"the warehouse {path} was written by a newer DuckDB than the {duckdb.__version__} "
        "creditlens runs on, which cannot read it; export it with that DuckDB (EXPORT DATABASE "
        f"'{path.stem}-export' (FORMAT parquet)), then `creditlens warehouse migrate --from "
        f"{path.stem}-export --to NEW_WAREHOUSE`; or set CREDITLENS_WAREHOUSE to a new file and "
        "resync, leaving closed statements, acknowledgements and alert history behind "
        "(docs/lake.md)"
    )


@contextmanager
def open_for_write(path: Path, lock_timeout_s: float) -> Iterator[duckdb.DuckDBPyConnection]:
    """The one writer's connection. A disk that fills is one line (pipelines/warehouse/disk.py):
    before COMMIT returns, DuckDB has rolled the write back; at the CHECKPOINT after it, what was
    committed is safe in DuckDB's log and is merged into the file when the file is next opened
    with room to spare."""
    lake = lake_at(path) is not None
    with file_lock(path, exclusive=True, timeout_s=lock_timeout_s):
        created = not lake and _start_from_empty(path)
        with connect(path, False) as con:
            try:
                if created:
                    _stamp_created(con)
                migrate(con, lake=lake)
                yield con
            except (duckdb.Error, OSError) as exc:
                if is_disk_full(exc):
                    raise disk_full(path, "nothing was changed") from None
                raise
            if lake:
                return  # each commit is a lake snapshot already: no log to merge
            try:
                con.execute("CHECKPOINT")
            except duckdb.Error as exc:
                if is_disk_full(exc):
                    raise disk_full(path, _committed_to_log(path)) from None
                if _merge_out_of_memory(exc):
                    raise WarehouseError(_merge_needs_memory(path)) from None
                raise


def _start_from_empty(path: Path) -> bool:
    """A new warehouse as a copy of an empty one (pipelines/warehouse/empty.py). Where the copy
    cannot be made, the warehouse is created from nothing as before, and says why if that fails
    too (a full disk, a folder it may not write)."""
    try:
        return copy_of_empty(path, f"schema-{MIGRATIONS[-1].version}", _build_empty)
    except (duckdb.Error, OSError):
        return False


def _build_empty(template: Path) -> None:
    with attached(template, read_only=False, memory_limit=DUCKDB_MEMORY_LIMIT) as con:
        migrate(con)
        con.execute("CHECKPOINT")


def _stamp_created(con: duckdb.DuckDBPyConnection) -> None:
    """The schema's history says when this warehouse was created, not its template."""
    with transaction(con):
        con.execute("UPDATE schema_version SET applied_at = now()")


def _merge_out_of_memory(exc: duckdb.Error) -> bool:
    """DuckDB 1.5's CHECKPOINT needs a few MB more than the queries before it at a tight cap."""
    return "failed to pin block" in str(exc) or isinstance(exc, duckdb.OutOfMemoryException)


def _merge_needs_memory(path: Path) -> str:
    return (
        f"{_committed_to_log(path)}: merging needed more memory than DuckDB was allowed "
        f"({capped(DUCKDB_MEMORY_LIMIT)}); raise {DUCKDB_MEMORY_LIMIT_ENV} (32MB or more) or "
        "unset it, then run the command again"
    )


def _committed_to_log(path: Path) -> str:
    return (
        f"this write is committed to {path.name}.wal (DuckDB's log) but not yet merged into "
        f"{path.name}, which happens at the next write with room, and the analyst copy is not "
        "republished until then"
    )


def frame(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None
) -> pl.DataFrame:
    """A query's result as a polars frame, through Arrow (exact DECIMALs, UTC timestamps)."""
    return pl.from_arrow(con.sql(sql, params=params or None).to_arrow_table())  # type: ignore[return-value]
