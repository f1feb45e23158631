"""The warehouse schema is a public interface: documented, versioned, upgraded in place."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb

from pipelines.warehouse.connection import apply_migration, current_version, migrate
from pipelines.warehouse.dictionary import COMMAND, data_dictionary
from pipelines.warehouse.dictionary import page as dictionary_page
from pipelines.warehouse.instances import WAREHOUSE_STORAGE_VERSION
from pipelines.warehouse.schema import MIGRATIONS, Migration, all_tables, latest_version
from pipelines.warehouse.writer import Warehouse

ROOT = Path(__file__).resolve().parents[2]


def test_an_older_warehouse_upgrades_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    assert migrate(con, up_to=1) == 1
    con.execute(
        "INSERT INTO ledger_entries VALUES ('acme', 'f-1', TIMESTAMPTZ '2025-01-01 10:00:00+00', "
        "DATE '2025-01-01', 'Usage', -1.25, 'x', true, 'Phone', 'a', 'c', 98.75, NULL, 'f', 1, "
        "'run', now(), DATE '2025-01-01', DATE '2025-01-01', 1, 0)"
    )
    con.close()
    Warehouse(path, lock_timeout_s=60).ensure()
    con = duckdb.connect(str(path), read_only=True)
    try:
        versions = [
            v for (v,) in con.execute("SELECT version FROM schema_version ORDER BY 1").fetchall()
        ]
        assert versions == list(range(1, latest_version() + 1))
        assert con.execute("SELECT amount, balance_after FROM ledger_entries").fetchall() == [
            (Decimal("-1.250000"), Decimal("98.750000"))
        ]
        tables = {
            t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        assert {t.name for t in all_tables()} <= tables
    finally:
        con.close()


def test_a_migration_failing_midway_leaves_the_warehouse_as_it_was(tmp_path: Path) -> None:
    """A migration runs as one script in one transaction: a statement failing after others
    succeeded must leave none of them behind, and the version where it was."""
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        assert migrate(con, up_to=1) == 1
        broken = Migration(
            version=2,
            description="fails halfway",
            statements=(
                "CREATE TABLE made_first (x INTEGER)",
                "ALTER TABLE ledger_entries ADD COLUMN added_first INTEGER",
                "SELECT * FROM no_such_table",
            ),
            tables=MIGRATIONS[1].tables,
        )
        try:
            apply_migration(con, broken)
        except duckdb.CatalogException as exc:
            assert "no_such_table" in str(exc)
        else:
            raise AssertionError("the broken migration applied")
        assert current_version(con) == 1
        names = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert "made_first" not in names
        columns = {row[0] for row in con.execute("DESCRIBE ledger_entries").fetchall()}
        assert "added_first" not in columns
        assert migrate(con) == latest_version()  # and the real upgrade still runs after it
    finally:
        con.close()


def test_every_table_view_and_column_has_a_comment(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    Warehouse(path, lock_timeout_s=60).ensure()
    con = duckdb.connect(str(path), read_only=True)
    try:
        undocumented = con.execute(
            "SELECT table_name, column_name FROM duckdb_columns() "
            "WHERE database_name = 'w' AND (comment IS NULL OR comment = '')"
        ).fetchall()
        tables = con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'w' AND comment IS NULL "
            "UNION ALL SELECT view_name FROM duckdb_views() WHERE database_name = 'w' "
            "AND NOT internal AND comment IS NULL"
        ).fetchall()
    finally:
        con.close()
    assert undocumented == [] and tables == []


def test_the_data_dictionary_page_is_generated_from_the_schema(tmp_path: Path) -> None:
    """docs/data-dictionary.md is the declarations' text, the same as the COMMENTs, and names
    every table, view and column a new warehouse has, each with its COMMENT."""
    page = (ROOT / "docs" / "data-dictionary.md").read_text(encoding="utf-8")
    assert page == dictionary_page(), f"docs/data-dictionary.md is not the schema's: run {COMMAND}"
    path = tmp_path / "w.duckdb"
    Warehouse(path, lock_timeout_s=60).ensure()
    with duckdb.connect(str(path), read_only=True) as con:
        columns = con.execute(
            "SELECT table_name, column_name, comment FROM duckdb_columns() "
            "WHERE database_name = 'w' AND NOT internal"
        ).fetchall()
    sections = {s.split("`", 2)[1]: s for s in data_dictionary().split("### ")[1:]}
    for table, name, comment in columns:
        assert f"| `{name}` |" in sections[table] and comment in sections[table], (table, name)


CATALOG = {
    "tables": "SELECT table_name, comment, sql FROM duckdb_tables() WHERE database_name = ?",
    "columns": (
        "SELECT table_name, column_name, column_index, data_type, column_default, is_nullable, "
        "comment FROM duckdb_columns() WHERE database_name = ?"
    ),
    "views": (
        "SELECT view_name, comment, sql FROM duckdb_views() WHERE database_name = ? "
        "AND NOT internal"
    ),
    "constraints": (
        "SELECT table_name, constraint_type, constraint_text FROM duckdb_constraints() "
        "WHERE database_name = ?"
    ),
    "indexes": "SELECT table_name, index_name, sql FROM duckdb_indexes() WHERE database_name = ?",
    "history": "SELECT version, description FROM schema_version",
}


def _catalog(path: Path) -> dict[str, list[tuple[object, ...]]]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {
            name: sorted(con.execute(sql, [path.stem] if "?" in sql else []).fetchall(), key=repr)
            for name, sql in CATALOG.items()
        }


def test_a_new_warehouse_is_the_schema_built_from_nothing(tmp_path: Path) -> None:
    """New warehouses are copies of an empty one built once per process
    (pipelines/warehouse/empty.py): each has every table, column, type, default, comment, view
    and constraint a migration from nothing gives, and the schema's history says when it was
    created."""
    nothing = tmp_path / "nothing.duckdb"
    with duckdb.connect() as con:  # in a new warehouse's format (its views' SQL is said in it)
        con.execute(
            f"ATTACH '{nothing}' AS nothing (STORAGE_VERSION '{WAREHOUSE_STORAGE_VERSION}')"
        )
        con.execute("USE nothing")
        migrate(con)
    expected = _catalog(nothing)
    assert len(expected["tables"]) > 20 and len(expected["history"]) == len(MIGRATIONS)
    for name in ("first", "second"):  # the first may build the template, the second copies it
        path = tmp_path / name / f"{name}.duckdb"
        with duckdb.connect() as clock:
            before = clock.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
        Warehouse(path, lock_timeout_s=60).ensure()
        assert _catalog(path) == expected
        with duckdb.connect(str(path), read_only=True) as con:
            [(oldest,)] = con.execute("SELECT min(applied_at) FROM schema_version").fetchall()
        assert oldest >= before
        assert not list(path.parent.glob(".*.new"))  # the copy's partial file is renamed
