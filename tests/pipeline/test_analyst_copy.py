"""The analyst copy: the warehouse's every table and view, same names, columns, types and rows;
republishing rewrites only the parts whose rows changed; a reader keeps the publish it opened.

One warehouse (two accounts, every table filled by the code a sync runs) is built once for the
module; each test changes it only by appending, as the pipeline does.
"""

from __future__ import annotations

import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import duckdb
import pytest

from pipelines.warehouse.analyst_parts import catalog, fingerprints, load_manifest
from pipelines.warehouse.analyst_views import STORAGE_VERSION, statements, write_views
from pipelines.warehouse.publish import (
    analyst_parquet_dir,
    publish_now,
    publishing_once,
)
from pipelines.warehouse.writer import Warehouse
from tests.dashboards.warehouse_factory import MAIN, SECOND, build_warehouse
from tests.pipeline.other_duckdb import ENV, VERSION

RELATIONS = (
    "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' UNION ALL "
    "SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal"
)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    path = tmp_path_factory.mktemp("analyst") / "warehouse.duckdb"
    build_warehouse(path)  # publishes once at its end
    return Warehouse(path, lock_timeout_s=30)


def parquet_files(warehouse: Warehouse) -> dict[str, float]:
    folder = analyst_parquet_dir(warehouse.analyst_copy)
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime for p in folder.rglob("*.parquet")}


def named(warehouse: Warehouse) -> dict[str, float]:
    """The files the current publish names, with their modification times."""
    folder = analyst_parquet_dir(warehouse.analyst_copy)
    return {n: (folder / n).stat().st_mtime for n in load_manifest(folder).files()}


def outcome(account: str) -> dict[str, object]:
    return {
        "sync_id": f"test-{datetime.now(UTC).timestamp()}",
        "account": account,
        "step": "ledger",
        "recorded_at": datetime.now(UTC),
        "result": "ok",
        "part": None,
        "error": None,
        "run_id": None,
    }


def describe(path: Path) -> dict[str, object]:
    """Every relation's columns and types, its comment and its columns' comments."""
    with duckdb.connect(str(path), read_only=True) as con:
        names = sorted(r[0] for r in con.execute(RELATIONS).fetchall())
        return {
            name: (
                # Names and types; a view has no NOT NULL to declare.
                [r[:2] for r in con.execute(f'DESCRIBE "{name}"').fetchall()],
                con.execute(
                    "SELECT column_name, comment FROM duckdb_columns() WHERE table_name = ? "
                    "ORDER BY column_index",
                    [name],
                ).fetchall(),
            )
            for name in names
        }


def rows(path: Path, name: str) -> list[tuple]:
    return every_row(path, [name])[name]


def every_row(path: Path, names: list[str]) -> dict[str, list[tuple]]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {n: sorted(con.execute(f'SELECT * FROM "{n}"').fetchall(), key=repr) for n in names}


def test_the_copy_has_every_table_and_view_with_the_same_columns_types_and_rows(
    warehouse: Warehouse,
) -> None:
    assert describe(warehouse.analyst_copy) == describe(warehouse.path)
    with duckdb.connect(str(warehouse.path), read_only=True) as con:
        names = [r[0] for r in con.execute(RELATIONS).fetchall()]
    copied, original = every_row(warehouse.analyst_copy, names), every_row(warehouse.path, names)
    for name in names:
        assert copied[name] == original[name], name
    assert rows(warehouse.analyst_copy, "ledger_entries")  # not vacuously equal


def _storage_version(path: Path) -> str:
    with duckdb.connect() as con:
        con.execute(f"ATTACH '{path}' AS copy (READ_ONLY)")
        found = con.execute(
            "SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = 'copy'"
        ).fetchone()
    assert found is not None
    return str(found[0])


def test_the_views_file_is_in_the_storage_format_duckdb_1_4_opens(warehouse: Warehouse) -> None:
    version = _storage_version(warehouse.analyst_copy)
    assert version.startswith(STORAGE_VERSION[:4]), version


def test_a_publish_with_nothing_changed_rewrites_nothing(warehouse: Warehouse) -> None:
    publish_now(warehouse.path, warehouse.analyst_copy, 30)
    before = parquet_files(warehouse), warehouse.analyst_copy.stat().st_ino
    done = publish_now(warehouse.path, warehouse.analyst_copy, 30)
    assert (done.rewritten, done.deleted) == (0, 0)
    assert (parquet_files(warehouse), warehouse.analyst_copy.stat().st_ino) == before


def test_one_changed_account_rewrites_only_its_part_and_an_open_reader_keeps_its_publish(
    warehouse: Warehouse,
) -> None:
    warehouse.append("sync_outcomes", [outcome(SECOND)])
    publish_now(warehouse.path, warehouse.analyst_copy, 30)
    before = named(warehouse)
    reader = duckdb.connect(str(warehouse.analyst_copy), read_only=True)
    seen = reader.execute("SELECT count(*) FROM sync_outcomes").fetchall()
    status = reader.execute("SELECT * FROM account_status ORDER BY account").fetchall()
    try:
        warehouse.append("sync_outcomes", [outcome(SECOND)])
        done = publish_now(warehouse.path, warehouse.analyst_copy, 30)
        after = named(warehouse)
        part = f"sync_outcomes/account={quote(SECOND, safe='')}/"
        assert done.rewritten == 1
        (added,) = set(after) - set(before)
        (replaced,) = set(before) - set(after)
        assert added.startswith(part) and replaced.startswith(part), (added, replaced)
        assert {n: t for n, t in after.items() if n in before} == {
            n: t for n, t in before.items() if n != replaced
        }  # the other parts kept, not touched
        assert replaced in parquet_files(warehouse)  # still there for the open reader
        # The open reader still reads the publish it opened, views over views included.
        assert reader.execute("SELECT count(*) FROM sync_outcomes").fetchall() == seen
        assert reader.execute("SELECT * FROM account_status ORDER BY account").fetchall() == status
    finally:
        reader.close()
    assert rows(warehouse.analyst_copy, "sync_outcomes") == rows(warehouse.path, "sync_outcomes")
    # The next publish deletes the file the last one replaced: two publishes' files at most.
    warehouse.append("sync_outcomes", [outcome(MAIN)])
    publish_now(warehouse.path, warehouse.analyst_copy, 30)
    assert replaced not in parquet_files(warehouse)
    assert set(parquet_files(warehouse)) == set(after) | set(named(warehouse))


def test_a_changed_day_of_the_ledger_rewrites_only_its_account_and_month(
    warehouse: Warehouse,
) -> None:
    """A daily sync lands today in every account: the ledger's parts are per account and month,
    so it rewrites each account's current month, not its whole history."""
    publish_now(warehouse.path, warehouse.analyst_copy, 30)
    before = named(warehouse)
    with warehouse.write() as con:
        con.execute(
            "UPDATE ledger_entries SET description = 'changed' WHERE entry_id = (SELECT max("
            "entry_id) FROM ledger_entries WHERE account = ? AND entry_day = DATE '2026-03-02')",
            [MAIN],
        )
    done = publish_now(warehouse.path, warehouse.analyst_copy, 30)
    (added,) = set(named(warehouse)) - set(before)
    assert done.rewritten == 1
    assert added.startswith(f"ledger_entries/account={MAIN}/month=2026-03/"), added
    assert rows(warehouse.analyst_copy, "ledger_entries") == rows(warehouse.path, "ledger_entries")


def test_a_publish_replaces_only_the_changed_tables_views_and_reads_as_a_whole_write(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    """A daily sync changes a few tables: the new views file is the previous one with their
    macros of files replaced (their views and comments stay). It must read exactly as a file
    written whole: every relation, column, type, comment and row, in the format DuckDB 1.4
    opens."""
    publish_now(warehouse.path, warehouse.analyst_copy, 30)
    warehouse.append("sync_outcomes", [outcome(SECOND)])
    done = publish_now(warehouse.path, warehouse.analyst_copy, 30)
    assert done.replaced == ("sync_outcomes",)
    assert describe(warehouse.analyst_copy) == describe(warehouse.path)
    assert rows(warehouse.analyst_copy, "sync_outcomes") == rows(warehouse.path, "sync_outcomes")
    assert rows(warehouse.analyst_copy, "account_status")  # a view over a replaced view
    assert _storage_version(warehouse.analyst_copy).startswith(STORAGE_VERSION[:4])
    # Not a file that grows with each publish: DuckDB reuses the blocks a replaced macro freed.
    sizes = []
    for _ in range(4):
        warehouse.append("sync_outcomes", [outcome(MAIN)])
        assert publish_now(warehouse.path, warehouse.analyst_copy, 30).replaced
        sizes.append(warehouse.analyst_copy.stat().st_size)
    assert max(sizes) <= 4 * 1024 * 1024, sizes


def test_a_views_file_the_manifest_does_not_describe_is_written_whole(
    warehouse: Warehouse,
) -> None:
    """A publish that crashed between renaming its views file and saving its manifest leaves a
    file of another publish: the next one cannot patch it and writes it whole."""
    publish_now(warehouse.path, warehouse.analyst_copy, 30)
    stranger = warehouse.analyst_copy.with_name("stranger.duckdb")
    stranger.write_bytes(warehouse.analyst_copy.read_bytes())
    stranger.replace(warehouse.analyst_copy)  # another file at the path
    warehouse.append("sync_outcomes", [outcome(MAIN)])
    done = publish_now(warehouse.path, warehouse.analyst_copy, 30)
    assert done.rewritten == 1 and done.replaced is None
    assert describe(warehouse.analyst_copy) == describe(warehouse.path)
    assert rows(warehouse.analyst_copy, "sync_outcomes") == rows(warehouse.path, "sync_outcomes")


def views_file(path: Path) -> dict[str, list[tuple]]:
    """Every view's SQL and comment, every column comment, and the macro of each table's files,
    of a views file."""
    with duckdb.connect(str(path), read_only=True) as con:
        return {
            "parts": sorted(
                con.execute(
                    "SELECT function_name, macro_definition FROM duckdb_functions() "
                    "WHERE schema_name = 'parts'"
                ).fetchall()
            ),
            "views": sorted(
                con.execute(
                    "SELECT view_name, sql, comment FROM duckdb_views() WHERE NOT internal"
                ).fetchall()
            ),
            "columns": sorted(
                con.execute(
                    "SELECT table_name, column_name, comment FROM duckdb_columns()"
                ).fetchall(),
                key=repr,
            ),
        }


def test_new_copies_started_from_the_empty_views_file_are_whole_writes(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    """A process's second and later new copies start from its views file of the catalog with no
    data (pipelines/warehouse/analyst_views.py): the same views, SQL and comments as the file
    written whole, in the format DuckDB 1.4 opens, reading the warehouse's rows."""
    targets = [tmp_path / f"copy{i}.duckdb" for i in range(2)]
    for target in targets:
        assert publish_now(warehouse.path, target, 30).replaced is None
    target = targets[1]
    folder = analyst_parquet_dir(target)
    with duckdb.connect(str(warehouse.path), read_only=True) as con:
        tables, views = catalog(con)
    whole = tmp_path / "whole.duckdb"
    write_views(whole, statements(folder, load_manifest(folder), tables, views))
    assert views_file(target) == views_file(whole)
    assert describe(target) == describe(warehouse.path)
    names = list(describe(warehouse.path))
    assert every_row(target, names) == every_row(warehouse.path, names)
    assert _storage_version(target).startswith(STORAGE_VERSION[:4])


def test_a_copy_moved_with_its_folder_reads_from_where_it_is_after_the_next_publish(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    """The views name their files by absolute path: moved, the next publish points every view,
    not only the changed tables' ones, at the new place."""
    publish_now(warehouse.path, warehouse.analyst_copy, 30)
    before = tmp_path / "before"
    shutil.copytree(warehouse.path.parent, before)
    moved = Warehouse(before / warehouse.path.name, lock_timeout_s=30)
    publish_now(moved.path, moved.analyst_copy, 30)
    after = tmp_path / "after"
    before.rename(after)
    moved = Warehouse(after / warehouse.path.name, lock_timeout_s=30)
    moved.append("sync_outcomes", [outcome(MAIN)])
    assert publish_now(moved.path, moved.analyst_copy, 30).replaced is None
    names = list(describe(moved.path))
    assert every_row(moved.analyst_copy, names) == every_row(moved.path, names)


def test_writes_inside_a_sync_publish_once_at_its_end(warehouse: Warehouse) -> None:
    publish_now(warehouse.path, warehouse.analyst_copy, 30)
    inode = warehouse.analyst_copy.stat().st_ino
    with publishing_once():
        for account in (MAIN, SECOND):
            warehouse.append("sync_outcomes", [outcome(account)])
            warehouse.publish_analyst_copy()
            assert warehouse.analyst_copy.stat().st_ino == inode  # not yet
    assert warehouse.analyst_copy.stat().st_ino != inode
    assert rows(warehouse.analyst_copy, "sync_outcomes") == rows(warehouse.path, "sync_outcomes")


def test_a_failed_sync_still_publishes_what_it_wrote(warehouse: Warehouse) -> None:
    with pytest.raises(RuntimeError), publishing_once():
        warehouse.append("sync_outcomes", [outcome(MAIN)])
        warehouse.publish_analyst_copy()
        raise RuntimeError("an account's step failed")
    assert rows(warehouse.analyst_copy, "sync_outcomes") == rows(warehouse.path, "sync_outcomes")


def test_ci_prepares_the_duckdb_1_4_the_test_expects() -> None:
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert f"duckdb=={VERSION}" in ci and f"export {ENV}=" in ci


def test_a_migration_that_adds_a_column_rewrites_that_tables_parts(
    warehouse: Warehouse,
) -> None:
    """A part written before the column existed cannot sit beside one written after it (one view
    reads them all): a table whose columns changed is written again whole."""
    publish_now(warehouse.path, warehouse.analyst_copy, 30)
    with warehouse.write() as con:
        con.execute("ALTER TABLE sync_outcomes ADD COLUMN IF NOT EXISTS later VARCHAR")
    done = publish_now(warehouse.path, warehouse.analyst_copy, 30)
    assert done.replaced is None  # another catalog: the views file is written whole
    assert done.rewritten == len(
        load_manifest(analyst_parquet_dir(warehouse.analyst_copy)).parts["sync_outcomes"]
    )
    assert (
        describe(warehouse.analyst_copy)["sync_outcomes"]
        == describe(warehouse.path)["sync_outcomes"]
    )
    assert rows(warehouse.analyst_copy, "sync_outcomes") == rows(warehouse.path, "sync_outcomes")


def test_a_killed_publishs_files_are_swept_by_the_next(warehouse: Warehouse) -> None:
    """A publish deletes the files the one before it retired, without walking the folder; a
    publish killed before its end (its marker left behind) wrote files no manifest names, and
    the next one walks the whole folder for them."""
    publish_now(warehouse.path, warehouse.analyst_copy, 30)
    folder = analyst_parquet_dir(warehouse.analyst_copy)
    stray = folder / "sync_outcomes" / f"account={quote(MAIN, safe='')}" / "part-1-0.parquet"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"a killed publish's part")
    warehouse.append("sync_outcomes", [outcome(MAIN)])
    publish_now(warehouse.path, warehouse.analyst_copy, 30)
    assert stray.exists()  # no marker: nothing says a publish died, and nothing walks the folder
    (folder / ".publishing-1").touch()  # what a publish killed mid-way leaves
    warehouse.append("sync_outcomes", [outcome(MAIN)])
    done = publish_now(warehouse.path, warehouse.analyst_copy, 30)
    assert not stray.exists() and done.deleted >= 1
    assert not list(folder.glob(".publishing-*"))
    assert rows(warehouse.analyst_copy, "sync_outcomes") == rows(warehouse.path, "sync_outcomes")


def test_parts_written_a_few_to_a_statement_make_the_same_copy(
    warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agency's first copy wrote every part of a table in one COPY, and DuckDB 1.5.5 ran out
    of its 512MB at 1,250 partitions; now PARTS_PER_COPY at a time. Two a time here, so every
    table of several parts is written in several statements, and the copy is the same."""
    from pipelines.warehouse import analyst_parts

    monkeypatch.setattr(analyst_parts, "PARTS_PER_COPY", 2)
    target = tmp_path / "batched.analyst.duckdb"
    publish_now(warehouse.path, target, 30)
    parts = load_manifest(analyst_parquet_dir(target)).parts
    assert max(len(p) for p in parts.values()) > 2  # some table took several statements
    with duckdb.connect(str(warehouse.path), read_only=True) as con:
        names = [r[0] for r in con.execute(RELATIONS).fetchall()]
    assert every_row(target, names) == every_row(warehouse.path, names)


def test_an_agencys_day_tables_are_fingerprinted_not_waited_on_forever(tmp_path: Path) -> None:
    """Three day tables of 500 accounts x 2,000 rows over two years, as an agency's first
    publish reads them: DuckDB 1.5.5 never answered the one UNION ALL of their scans that the
    publish used to send (every thread idle); each table's own query answers."""
    path = tmp_path / "agency.duckdb"
    with duckdb.connect(str(path)) as con:
        for table, day in (("daily_balance", "day"), ("ledger_chain", "entry_day"),
                           ("ledger_entries", "entry_day")):  # fmt: skip
            con.execute(
                f"CREATE TABLE {table} AS SELECT 'company-' || lpad((i % 500)::VARCHAR, 3, '0') "
                f"AS account, DATE '2024-06-30' + ((i // 500) % 730)::INTEGER AS {day}, i AS x "
                "FROM range(1000000) r(i)"
            )
    found: dict[str, dict[str, tuple[int, str]]] = {}

    def fingerprint() -> None:
        with duckdb.connect(str(path), read_only=True) as con:
            found.update(fingerprints(con, catalog(con)[0]))

    worker = threading.Thread(target=fingerprint, daemon=True)  # a hang must not hang the suite
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "the fingerprints never returned"
    assert sorted(found) == ["daily_balance", "ledger_chain", "ledger_entries"]
    for parts in found.values():
        assert len(parts) == 500 * 25  # every account's months, June 2024 to June 2026
        assert sum(rows for rows, _ in parts.values()) == 1_000_000
