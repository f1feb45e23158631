"""The analyst copy's one DuckDB file: a view per warehouse table over its Parquet parts, and
the warehouse's own views over those, in the storage format DuckDB 1.4 reads.

BI tools, DBeaver, R and Node still ship DuckDB 1.4 (the LTS), which refuses a file in DuckDB
2.0's format; ``STORAGE_VERSION 'v1.4.0'`` writes one it opens. The file holds no data, so it is
written whole at every publish in milliseconds, and renamed over the old one: an analyst opens
the same path, sees the same names, columns, types and comments as in the warehouse, and a
reader sees one publish or the next, never half.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from pipelines.warehouse.analyst_parts import Manifest, Relation
from pipelines.warehouse.instances import attached
from pipelines.warehouse.schema import all_tables
from pipelines.warehouse.sql_text import literal, quote

# The oldest DuckDB that must open the copy: the 1.4 LTS.
STORAGE_VERSION = "v1.4.0"


def statements(
    folder: Path, manifest: Manifest, tables: Sequence[Relation], views: Sequence[Relation]
) -> list[str]:
    """Every statement of the views file: a view per table over its parts, then the warehouse's
    views from their one declaration (in the order that creates a view's dependencies first),
    then every comment. The same catalog and parts give the same text, so its digest says
    whether the file must be written again."""
    out = []
    for table in tables:
        files = sorted(f for p in manifest.parts.get(table.name, {}).values() for f in p.files)
        sql = table_sql(table, [str(folder / f) for f in files])
        out.append(f"CREATE VIEW {quote(table.name)} AS {sql}")
    present = {v.name: v for v in views}
    declared = [d for d in all_tables() if d.kind == "view" and d.name in present]
    out += [d.create_sql() for d in declared]
    for relation in [*tables, *(present[d.name] for d in declared)]:
        out += comments(relation)
    return out


def digest(sql: Sequence[str]) -> str:
    return hashlib.blake2b("\n".join(sql).encode(), digest_size=16).hexdigest()


def write_views(partial: Path, sql: Sequence[str]) -> None:
    """Creates ``partial`` (which must not exist) from ``statements``; the caller renames it
    into place."""
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
