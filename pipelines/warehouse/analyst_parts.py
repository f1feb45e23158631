"""The analyst copy's data: Parquet files per table and account, rewritten only where rows changed.

A whole-file copy of the warehouse cost, on every publish, time and free disk the size of the
warehouse, whatever the sync changed. Here each (table, account) pair is one part: its row count
and a checksum of its rows are kept in a small manifest, and only the parts whose count or
checksum moved are written again, as new files under a new generation's name beside the old ones
(a reader of the previous publish still finds every file it names). Parquet keeps the warehouse's
types (DECIMAL(18,6) stays DECIMAL) and every DuckDB since 0.9, and most other tools, read it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from pipelines.warehouse.lake import current_lake
from pipelines.warehouse.sql_text import literal, quote

MANIFEST = "manifest.json"
# The alias a row is hashed by, whole (a struct of every column); no column is named so.
_ROW = "creditlens_row_"
# The columns a growing table's rows are dated by, in order of preference, and the name of the
# month column its Parquet files carry besides the table's own (folder ``month=2026-11``).
DAY_COLUMNS = ("entry_day", "day")
MONTH = "month"
# The part of a table that has no account column (schema_version, the audit's own tables).
WHOLE = ""


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    comment: str | None


@dataclass(frozen=True)
class Relation:
    """A table or view of the warehouse as its catalog says it is now."""

    name: str
    comment: str | None
    columns: tuple[Column, ...]

    @property
    def by_account(self) -> bool:
        return any(c.name == "account" for c in self.columns)

    @property
    def day_column(self) -> str | None:
        """The day a row belongs to, in the tables that grow by the day (the ledger, its chain,
        the daily balance, the quarantine): their parts are per account and month, so a daily
        sync rewrites each account's current month, not its whole history."""
        names = {c.name: c.type for c in self.columns}
        if not self.by_account or MONTH in names:
            return None
        return next((n for n in DAY_COLUMNS if names.get(n) == "DATE"), None)

    def key_sql(self) -> str:
        """A part's name as SQL over the table's rows: '' for the whole table, the account, or
        the account and the month (``acme/2026-11``; the month is the last 7 characters)."""
        if not self.by_account:
            return f"'{WHOLE}'"
        if self.day_column is None:
            return "account"
        return f"account || '/' || {self.month_sql()}"

    def month_sql(self) -> str:
        return f"coalesce(strftime({quote(self.day_column or '')}, '%Y-%m'), 'none')"

    @property
    def shape(self) -> str:
        """Names and types: a part written under another shape is rewritten (a migration that
        adds a column would otherwise leave older files that read_parquet cannot union)."""
        return ",".join(f"{c.name} {c.type}" for c in self.columns)


@dataclass(frozen=True)
class Part:
    rows: int
    checksum: str
    files: tuple[str, ...]  # relative to the Parquet folder
    bytes: int = 0


@dataclass
class Manifest:
    """What the current publish is made of: parts per table, each named by account."""

    generation: int = 0
    views: str = ""  # the digest of the views file's statements, which name every file
    catalog: str = ""  # the same without the files (analyst_views.catalog_digest)
    views_file: str = ""  # the views file this manifest describes (``file_identity``)
    shapes: dict[str, str] = field(default_factory=dict)
    parts: dict[str, dict[str, Part]] = field(default_factory=dict)
    # The files the publish before named and this one does not: a reader holding that publish's
    # views file has had this whole publish to reopen, so the next publish deletes them. None:
    # unknown (a manifest older than this field), and the next publish sweeps the whole folder.
    retired: frozenset[str] | None = None
    # On a lake: the snapshot this publish read, as (id, time): the next one fingerprints only
    # the tables a later snapshot wrote (``lake_changes``). None: a file, or unknown.
    lake_snapshot: tuple[int, str] | None = None

    def files(self) -> set[str]:
        return {f for parts in self.parts.values() for p in parts.values() for f in p.files}

    def to_json(self) -> str:
        return json.dumps(
            {
                "generation": self.generation,
                "views": self.views,
                "catalog": self.catalog,
                "views_file": self.views_file,
                "shapes": self.shapes,
                "retired": None if self.retired is None else sorted(self.retired),
                "lake_snapshot": None if self.lake_snapshot is None else list(self.lake_snapshot),
                "parts": {
                    table: {
                        key: {"rows": p.rows, "checksum": p.checksum, "files": list(p.files),
                              "bytes": p.bytes}
                        for key, p in parts.items()
                    }
                    for table, parts in self.parts.items()
                },
            },
            # No indent: Python's C encoder serves only unindented output, and at 500 companies
            # (44,000 parts) the indented manifest took 2.0 s of each publish to write.
            separators=(",", ":"),
            sort_keys=True,
        )  # fmt: skip


def load_manifest(folder: Path) -> Manifest:
    """The last publish's manifest; an empty one (everything is written) when it is missing or
    unreadable, which costs one full write and never a stale part."""
    try:
        data: dict[str, Any] = json.loads((folder / MANIFEST).read_text())
        return Manifest(
            generation=int(data["generation"]),
            views=str(data.get("views", "")),
            catalog=str(data.get("catalog", "")),
            views_file=str(data.get("views_file", "")),
            shapes=dict(data["shapes"]),
            retired=None if data.get("retired") is None else frozenset(data["retired"]),
            lake_snapshot=_snapshot(data.get("lake_snapshot")),
            parts={
                table: {
                    key: _part(p) for key, p in parts.items()
                }
                for table, parts in data["parts"].items()
            },
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return Manifest()


def _snapshot(data: Any) -> tuple[int, str] | None:
    if not isinstance(data, list) or len(data) != 2:
        return None
    return int(data[0]), str(data[1])


def _part(data: dict[str, Any]) -> Part:
    return Part(int(data["rows"]), str(data["checksum"]), tuple(data["files"]), int(data["bytes"]))


def file_identity(path: Path) -> str:
    """Which file is at ``path``: its inode, size and time of last change. A publish that
    crashed after renaming its views file but before its manifest leaves a file the manifest
    does not describe; this tells, so the next publish writes that file whole."""
    try:
        st = path.stat()
    except OSError:
        return ""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def save_manifest(folder: Path, manifest: Manifest) -> None:
    """Written beside, flushed, then renamed: a crash leaves the old manifest or the new one."""
    partial = folder / f".{MANIFEST}.{os.getpid()}.partial"
    try:
        partial.write_text(manifest.to_json())
        fsync_path(partial)
        os.replace(partial, folder / MANIFEST)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise


def catalog(con: duckdb.DuckDBPyConnection) -> tuple[list[Relation], list[Relation]]:
    """(tables, views) of the warehouse's main schema, with their columns and comments."""
    where = "database_name = current_database() AND schema_name = 'main'"
    columns: dict[str, list[Column]] = {}
    for table, name, type_, comment in con.execute(
        f"SELECT table_name, column_name, data_type, comment FROM duckdb_columns() WHERE {where} "
        "ORDER BY table_name, column_index"
    ).fetchall():
        columns.setdefault(table, []).append(Column(name, type_, comment or None))

    def relations(sql: str) -> list[Relation]:
        found = con.execute(sql).fetchall()
        return [Relation(n, c or None, tuple(columns.get(n, ()))) for n, c in found]

    tables = relations(
        f"SELECT table_name, comment FROM duckdb_tables() WHERE {where} ORDER BY table_name"
    )
    views = relations(
        f"SELECT view_name, comment FROM duckdb_views() WHERE {where} AND NOT internal "
        "ORDER BY view_name"
    )
    return tables, views


def fingerprints(
    con: duckdb.DuckDBPyConnection, tables: Sequence[Relation]
) -> dict[str, dict[str, tuple[int, str]]]:
    """Each table's parts' (rows, checksum): one scan of each table, no write. The checksum is
    the sum of the rows' hashes, so it ignores row order and counts a repeated row twice.

    One query per table: DuckDB 1.5.5 never returns from a UNION ALL of these scans once three
    of them group a million rows each into account-months (an agency of 500 companies' first
    publish waited forever, every thread idle; 2.0.0 answers the same query in 0.12 s;
    tests/pipeline/test_analyst_copy.py builds that case). One query for all of them saved
    about 8 ms a publish of a small warehouse, in parse and plan."""
    found: dict[str, dict[str, tuple[int, str]]] = {t.name: {} for t in tables}
    for table in tables:
        scan = (
            f"SELECT ({table.key_sql()})::VARCHAR AS part, count(*) AS rows_, "
            f"sum(hash({_ROW}))::VARCHAR AS checksum FROM {quote(table.name)} AS {_ROW} "
            "GROUP BY ALL"
        )
        for key, rows, checksum in con.execute(scan).fetchall():
            found[table.name][key if key is not None else ""] = (int(rows), str(checksum))
    return found


# What a lake snapshot's ``changes`` may say of rows: a table written, by files or inlined in
# the catalog. Any other change (a table created, altered or dropped, a compaction) makes the
# next publish fingerprint every table, as a file's does.
ROW_CHANGES = frozenset(
    {"tables_inserted_into", "tables_deleted_from", "inlined_insert", "inlined_delete"}
)


def lake_changes(
    con: duckdb.DuckDBPyConnection, since: tuple[int, str] | None
) -> tuple[tuple[int, str] | None, set[str] | None]:
    """On a lake, (the snapshot read now, the tables whose rows a snapshot after ``since``
    changed); on a file (None, None). The set is None, "fingerprint everything", when the lake
    cannot say: no earlier snapshot, one no longer there or of another time (the lake was made
    again, or its old snapshots expired), or a change other than rows.

    Each lake commit records what it changed in the same transaction, so the publish asks the
    lake instead of scanning all of its tables: each scan of a lake table is catalog queries in
    PostgreSQL, and fingerprinting all of them was 0.4 to 0.6 s of every sync."""
    alias = current_lake(con)
    if alias is None:
        return None, None
    lake = literal(alias)
    if since is None:  # only the snapshot read now: a lake of a year holds thousands
        latest = con.execute(
            f"SELECT snapshot_id, snapshot_time::VARCHAR FROM ducklake_snapshots({lake}) "
            "ORDER BY snapshot_id DESC LIMIT 1"
        ).fetchone()
        return (None if latest is None else (int(latest[0]), str(latest[1]))), None
    rows = con.execute(
        f"SELECT snapshot_id, snapshot_time::VARCHAR, changes FROM ducklake_snapshots({lake}) "
        "WHERE snapshot_id >= ? ORDER BY snapshot_id",
        [since[0]],
    ).fetchall()
    if not rows:
        return None, None
    now = (int(rows[-1][0]), str(rows[-1][1]))
    if (int(rows[0][0]), str(rows[0][1])) != since:
        return now, None
    ids = [int(r[0]) for r in rows]
    if ids != list(range(ids[0], ids[0] + len(ids))):
        return now, None  # a snapshot between is gone: what it changed is unknown
    changed: set[int] = set()
    for _, _, changes in rows[1:]:
        for kind, tables in dict(changes).items():
            if kind not in ROW_CHANGES:
                return now, None
            changed.update(int(t) for t in tables)
    names = dict(
        con.execute(f"SELECT table_id, table_name FROM ducklake_table_info({lake})").fetchall()
    )
    if not changed <= set(names):
        return now, None
    return now, {str(names[t]) for t in changed}


# The most parts one COPY writes: each open partition holds its own buffers, and DuckDB 1.5.5
# ran out of 512MB writing an agency's first copy (50 accounts x 25 months, 1,250 partitions in
# one statement; 2.0 did not); in statements of up to 256 parts memory follows the batch, not
# the agency (measured: 400 parts 436 MB peak, 100 parts 324 MB, the whole 1,250 out of memory).
PARTS_PER_COPY = 256


def export(
    con: duckdb.DuckDBPyConnection,
    folder: Path,
    table: Relation,
    keys: Iterable[str],
    generation: int,
) -> dict[str, tuple[str, ...]]:
    """Writes the given parts of one table, PARTS_PER_COPY to a statement: {key: files,
    relative to folder}.

    Files carry the generation in their name, so they never overwrite a file a reader may use.
    """
    wanted = sorted(keys)
    written: dict[str, tuple[str, ...]] = {}
    for start in range(0, len(wanted), PARTS_PER_COPY):
        written.update(
            _export(con, folder, table, wanted[start : start + PARTS_PER_COPY], generation)
        )
    return written


def _export(
    con: duckdb.DuckDBPyConnection,
    folder: Path,
    table: Relation,
    wanted: list[str],
    generation: int,
) -> dict[str, tuple[str, ...]]:
    if not wanted:
        return {}
    directory = folder / table.name
    directory.mkdir(parents=True, exist_ok=True)
    options = "FORMAT parquet, COMPRESSION zstd, RETURN_FILES true"
    if not table.by_account:
        target = directory / f"part-{generation}.parquet"
        con.execute(
            f"COPY (SELECT * FROM {quote(table.name)}) TO {literal(str(target))} ({options})"
        )
        return {WHOLE: (_relative(folder, target),)}
    chosen = f"{table.key_sql()} IN ({', '.join(literal(k) for k in wanted)})"
    month = f", {table.month_sql()} AS {MONTH}" if table.day_column else ""
    by = "account, month" if table.day_column else "account"
    written = con.execute(
        f"COPY (SELECT *{month} FROM {quote(table.name)} WHERE {chosen}) "
        f"TO {literal(str(directory))} ({options}, PARTITION_BY ({by}), "
        f"WRITE_PARTITION_COLUMNS true, OVERWRITE_OR_IGNORE true, "
        f"FILENAME_PATTERN 'part-{generation}-{{i}}')"
    ).fetchall()
    files = [str(f) for f in written[0][1]] if written else []
    if len(wanted) == 1:  # every row written is that part's: no file to read back
        return {wanted[0]: tuple(sorted(_relative(folder, Path(f)) for f in files))}
    owners: dict[str, list[str]] = {}
    key = f"account || '/' || {MONTH}" if table.day_column else "account"
    if files:
        # Which part each file holds, as written (not decoded back from the folder's name).
        for name, part in con.execute(
            f"SELECT filename, any_value({key}) FROM read_parquet(?, filename = true, "
            "hive_partitioning = false) GROUP BY filename",
            [files],
        ).fetchall():
            owners.setdefault(str(part), []).append(_relative(folder, Path(name)))
    return {k: tuple(sorted(owners.get(k, []))) for k in wanted}


def file_bytes(folder: Path, files: Iterable[str]) -> int:
    total = 0
    for name in files:
        with contextlib.suppress(OSError):
            total += (folder / name).stat().st_size
    return total


def sweep(folder: Path, keep: set[str]) -> int:
    """Deletes the Parquet files no kept publish names (a crashed publish's, and those the last
    but one replaced): a reader holding that old views file has had a whole publish to reopen.
    Returns how many were deleted."""
    deleted = 0
    for path in sorted(folder.rglob("*.parquet")):  # under `folder`: relative without resolving
        if path.relative_to(folder).as_posix() not in keep:
            with contextlib.suppress(OSError):
                path.unlink()
                deleted += 1
    prune(folder)
    return deleted


def sweep_retired(folder: Path, retired: Iterable[str], keep: set[str]) -> int:
    """Deletes the files the manifest before the last one retired (``sweep``'s rule, without
    walking the folder: a daily publish replaces a few parts per company, and the walk over
    every part of an agency cost more than the publish). Returns how many were deleted."""
    deleted = 0
    parents: set[Path] = set()
    for name in sorted(set(retired) - keep):
        path = folder / name
        with contextlib.suppress(OSError):
            path.unlink()
            deleted += 1
            parents.add(path.parent)
    for directory in sorted(parents, key=lambda p: -len(p.parts)):
        while directory != folder and directory.is_relative_to(folder):
            try:
                directory.rmdir()  # only empty folders go
            except OSError:
                break
            directory = directory.parent
    return deleted


def prune(folder: Path) -> None:
    """Removes the folders no file is left in (a table's or an account's)."""
    for directory in sorted(folder.rglob("*"), key=lambda p: -len(p.parts)):
        if directory.is_dir():
            with contextlib.suppress(OSError):
                directory.rmdir()  # only empty folders go


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _relative(folder: Path, path: Path) -> str:
    return Path(path).resolve().relative_to(folder.resolve()).as_posix()
