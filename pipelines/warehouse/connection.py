"""Opening the warehouse to write: the lock, the migrations, transactions.

Readers open it through pipelines/warehouse/read.py instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import duckdb
import polars as pl

from pipelines.warehouse.disk import disk_full, is_disk_full
from pipelines.warehouse.empty import copy_of_empty
from pipelines.warehouse.errors import WarehouseError
from pipelines.warehouse.instances import attached
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


def apply_migration(con: duckdb.DuckDBPyConnection, migration: Migration) -> None:
    # Statements first: they alter what exists, and a migration's new views may read it.
    script = [
        SCHEMA_VERSION.create_sql(),
        *SCHEMA_VERSION.comment_sql(),
        *migration.statements,
        *(table.create_sql() for table in migration.tables),
        *(statement for table in migration.tables for statement in table.comment_sql()),
    ]
    with transaction(con):
        # One call: a round trip per statement (some 700 for a new warehouse, most of them
        # comments) was most of a first sync's time in the warehouse.
        con.execute(";\n".join(script))
        con.execute(
            "INSERT INTO schema_version VALUES (?, ?, now())",
            [migration.version, migration.description],
        )


def migrate(con: duckdb.DuckDBPyConnection, up_to: int | None = None) -> int:
    """Upgrades in place, in order; returns the version reached."""
    version = current_version(con)
    latest = MIGRATIONS[-1].version
    if version > latest:
        raise WarehouseError(
            f"the warehouse is at schema version {version}, newer than this creditlens "
            f"understands ({latest}); upgrade creditlens"
        )
    for migration in MIGRATIONS:
        if version < migration.version <= (up_to or latest):
            apply_migration(con, migration)
            version = migration.version
    return version


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
            raise WarehouseError(f"cannot open the warehouse {path}: {exc}") from None
        yield con


@contextmanager
def open_for_write(path: Path, lock_timeout_s: float) -> Iterator[duckdb.DuckDBPyConnection]:
    """The one writer's connection. A disk that fills is one line (pipelines/warehouse/disk.py):
    before COMMIT returns, DuckDB has rolled the write back; at the CHECKPOINT after it, what was
    committed is safe in DuckDB's log and is merged into the file when the file is next opened
    with room to spare."""
    with file_lock(path, exclusive=True, timeout_s=lock_timeout_s):
        created = _start_from_empty(path)
        with connect(path, False) as con:
            try:
                if created:
                    _stamp_created(con)
                migrate(con)
                yield con
            except (duckdb.Error, OSError) as exc:
                if is_disk_full(exc):
                    raise disk_full(path, "nothing was changed") from None
                raise
            try:
                con.execute("CHECKPOINT")
            except duckdb.Error as exc:
                if is_disk_full(exc):
                    raise disk_full(path, _committed_to_log(path)) from None
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
