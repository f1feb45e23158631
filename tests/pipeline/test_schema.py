"""The warehouse schema is a public interface: documented, versioned, upgraded in place."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb

from pipelines.warehouse.connection import migrate
from pipelines.warehouse.dictionary import data_dictionary
from pipelines.warehouse.schema import all_tables, latest_version
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


def test_readme_data_dictionary_is_current() -> None:
    readme = (ROOT / "README.md").read_text()
    assert data_dictionary() in readme, "run: python -m pipelines.warehouse.dictionary"
