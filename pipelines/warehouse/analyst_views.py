"""The analyst copy's one DuckDB file: a view per warehouse table over its Parquet parts, and
the warehouse's own views over those, in the storage format DuckDB 1.4 reads.

BI tools, DBeaver, R and Node still ship DuckDB 1.4 (the LTS), which refuses a file in the
warehouse's DuckDB 1.5 format; ``STORAGE_VERSION 'v1.4.0'`` writes one it opens. The file holds
no data: it is written beside the old one, then renamed over it, so an analyst opens the same
path, sees the same names, columns, types and comments as in the warehouse, and a reader sees
one publish or the next, never half.

A table's view names no file: it reads a table macro of the same name in the ``parts`` schema,
which lists the table's Parquet files. A publish that changes a table's files replaces only its
macro; the view, and the comments on it and its columns, stay as they are.

Written whole it is some 560 statements, most of them column comments, each a catalog change in
DuckDB: about 0.15 s, most of a small sync's publish. A daily sync changes the files of a few
tables only, so when the catalog is the one the previous file was written for, the new file is a
copy of the previous one with those tables' macros replaced, one statement each. (Replacing a
view drops its comments, some 235 of them to write again: 70% of a patch, when the views
named their files.) A copy keeps the format it was created in, so it stays readable by DuckDB
1.4.

A process that writes views files whole again and again (a new copy each time: the benchmarks, the
tests, warehouses tried one after another) starts the second and later ones from a copy of the
catalog's views file with no data, built then and kept for the process
(pipelines/warehouse/empty.py), and replaces the views of the tables that have files. A process
that writes one pays nothing for it.
"""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import duckdb

from pipelines.warehouse.analyst_parts import Manifest, Relation
from pipelines.warehouse.empty import template
from pipelines.warehouse.instances import attached
from pipelines.warehouse.schema import all_tables
from pipelines.warehouse.sql_text import literal, quote

# The oldest DuckDB that must open the copy: the 1.4 LTS.
STORAGE_VERSION = "v1.4.0"
# The schema of the macros that list each table's files (a warehouse has no schema of that name).
PARTS = "parts"


def statements(
    folder: Path, manifest: Manifest, tables: Sequence[Relation], views: Sequence[Relation]
) -> list[str]:
    """Every statement of the views file: a view per table over its macro of parts, then the
    warehouse's views from their one declaration (in the order that creates a view's
    dependencies first), then every comment. The same catalog and parts give the same text, so
    its digest says whether the file must be written again."""
    out = [f"CREATE SCHEMA {PARTS}"] if tables else []
    for table in tables:
        out += [
            f"CREATE MACRO {table_parts(folder, manifest, table)}",
            f"CREATE VIEW {quote(table.name)} AS SELECT * FROM {parts_macro(table)}()",
        ]
    present = {v.name: v for v in views}
    declared = [d for d in all_tables() if d.kind == "view" and d.name in present]
    out += [d.create_sql() for d in declared]
    for relation in [*tables, *(present[d.name] for d in declared)]:
        out += comments(relation)
    return out


def table_statements(folder: Path, manifest: Manifest, table: Relation) -> list[str]:
    """One table's macro replaced by its macro over the manifest's files (its view, and the
    comments, stay)."""
    return [f"CREATE OR REPLACE MACRO {table_parts(folder, manifest, table)}"]


def parts_macro(table: Relation) -> str:
    return f"{PARTS}.{quote(table.name)}"


def table_parts(folder: Path, manifest: Manifest, table: Relation) -> str:
    # Joined as text, not as Path objects: 51,000 files at 500 companies cost 0.6 s in pathlib.
    root = str(folder)
    sql = table_sql(table, [f"{root}/{f}" for f in table_files(manifest, table.name)])
    return f"{parts_macro(table)}() AS TABLE {sql}"


def table_files(manifest: Manifest, table: str) -> list[str]:
    return sorted(f for p in manifest.parts.get(table, {}).values() for f in p.files)


def catalog_digest(folder: Path, tables: Sequence[Relation], views: Sequence[Relation]) -> str:
    """The views file's statements without the files they name, and the folder that holds
    them: equal, and a file written for one catalog is made current by replacing the views of
    the tables whose files changed. (A copy moved elsewhere with its folder names files by
    their old paths: its next publish writes every view.)"""
    return digest([str(folder), *statements(folder, Manifest(), tables, views)])


def digest(sql: Sequence[str]) -> str:
    return hashlib.blake2b("\n".join(sql).encode(), digest_size=16).hexdigest()


_written_whole: Counter[str] = Counter()


def write_new_views(
    partial: Path,
    sql: Sequence[str],
    folder: Path,
    manifest: Manifest,
    tables: Sequence[Relation],
    views: Sequence[Relation],
) -> None:
    """Creates ``partial`` as ``sql`` (``statements`` of the arguments) would: written whole the
    first time a process does it for this catalog, then from the process's empty views file of
    it."""
    empty_sql = statements(folder, Manifest(), tables, views)  # names no file, so no folder
    key = f"views-{digest(empty_sql)}"
    _written_whole[key] += 1
    empty = None
    if _written_whole[key] > 1:
        try:
            empty = template(key, lambda path: write_views(path, empty_sql))
        except (duckdb.Error, OSError):
            empty = None  # written whole below, which says what is wrong if it fails too
    if empty is None:
        write_views(partial, sql)
        return
    patch, _ = changed_views(folder, Manifest(), manifest, tables)
    write_views(partial, patch, previous=empty)


def changed_views(
    folder: Path, before: Manifest, after: Manifest, tables: Sequence[Relation]
) -> tuple[list[str], tuple[str, ...]]:
    """What turns a views file written for ``before`` into one for ``after``, of the same
    catalog: ``table_statements`` of each table whose files differ, and those tables' names
    (what ``Published.replaced`` reports: the tables whose file lists were replaced)."""
    moved = [t for t in tables if table_files(before, t.name) != table_files(after, t.name)]
    return [s for t in moved for s in table_statements(folder, after, t)], tuple(
        t.name for t in moved
    )


def write_views(partial: Path, sql: Sequence[str], previous: Path | None = None) -> None:
    """Creates ``partial`` (which must not exist) from ``statements``, or as a copy of
    ``previous`` changed by ``table_statements`` of the tables whose files changed (a copy keeps
    the storage format it was created in); the caller renames it into place."""
    if previous is not None:
        shutil.copyfile(previous, partial)
    with attached(
        partial, read_only=False, memory_limit="256MB", storage_version=STORAGE_VERSION
    ) as con:
        # One transaction and one call: a commit and a round trip per view and comment (some
        # 450) took most of a publish.
        con.execute("BEGIN")
        con.execute(";\n".join(sql))
        con.execute("COMMIT")


def table_sql(table: Relation, files: Sequence[str]) -> str:
    """The table's columns with the warehouse's types: cast, so a type Parquet spells its own way
    reads back as the warehouse's; no file (an empty table) is an empty result of those types."""
    columns = ", ".join(
        f"CAST({quote(c.name)} AS {c.type}) AS {quote(c.name)}" for c in table.columns
    )
    if not files:
        nulls = ", ".join(f"CAST(NULL AS {c.type}) AS {quote(c.name)}" for c in table.columns)
        return f"SELECT {nulls} WHERE false"
    listed = ", ".join(literal(f) for f in files)
    # Not hive-partitioned: the account is a column of each file, never read from its folder.
    return f"SELECT {columns} FROM read_parquet([{listed}], hive_partitioning = false)"


def comments(relation: Relation) -> list[str]:
    out = []
    if relation.comment:
        out.append(f"COMMENT ON VIEW {quote(relation.name)} IS {literal(relation.comment)}")
    out += [
        f"COMMENT ON COLUMN {quote(relation.name)}.{quote(c.name)} IS {literal(c.comment)}"
        for c in relation.columns
        if c.comment
    ]
    return out
