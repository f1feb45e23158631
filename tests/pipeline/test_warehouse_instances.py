"""The warm DuckDB instances behind every open of the warehouse (pipelines/warehouse/instances.py).

Reusing an instance must be invisible: between opens the file is free for another process, an
open's settings are its own, and an open that failed leaves nothing behind for the next.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pipelines.warehouse.connection import open_for_write, transaction
from pipelines.warehouse.errors import WarehouseError
from pipelines.warehouse.instances import WAREHOUSE_STORAGE_VERSION, limit_memory
from pipelines.warehouse.read import open_read_only, table_names


def _write(path: Path, sql: str) -> None:
    with open_for_write(path, lock_timeout_s=5) as con, transaction(con):
        con.execute(sql)


def test_between_opens_another_process_can_write_the_file(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    _write(path, "CREATE TABLE probe AS SELECT 1 AS n")
    with open_read_only(path, lock_timeout_s=5) as con:
        assert con.execute("SELECT n FROM probe").fetchall() == [(1,)]
    # A child process takes DuckDB's own write lock: it fails if this process still held it.
    insert = "INSERT INTO probe VALUES (2)"
    code = f"import duckdb; duckdb.connect({str(path)!r}).execute({insert!r})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open_read_only(path, lock_timeout_s=5) as con:
        assert con.execute("SELECT n FROM probe ORDER BY n").fetchall() == [(1,), (2,)]


def test_an_opens_settings_and_catalog_are_its_own(tmp_path: Path) -> None:
    one, two = tmp_path / "one.duckdb", tmp_path / "two.duckdb"
    _write(one, "CREATE TABLE only_in_one (n INTEGER)")
    _write(two, "CREATE TABLE only_in_two (n INTEGER)")
    limit_of_an_open = "SELECT current_setting('memory_limit')"
    with open_read_only(two, lock_timeout_s=5) as con:
        default = con.execute(limit_of_an_open).fetchone()
    with open_for_write(one, lock_timeout_s=5) as con:
        limit_memory(con, "64MB")  # as the reconciliation's commit does
        assert con.execute(limit_of_an_open).fetchone() != default
    with open_read_only(two, lock_timeout_s=5) as con:
        limit = con.execute(limit_of_an_open).fetchone()
        zone = con.execute("SELECT current_setting('TimeZone')").fetchone()
        names = table_names(con)
        with open_read_only(one, lock_timeout_s=5) as inner:  # a read inside a read
            assert "only_in_one" in table_names(inner)
    assert limit == default
    assert zone == ("UTC",)
    assert "only_in_two" in names and "only_in_one" not in names


def test_a_file_that_is_no_database_is_one_line_and_the_next_open_works(tmp_path: Path) -> None:
    bad = tmp_path / "bad.duckdb"
    bad.write_bytes(b"not a database" * 500)
    with (
        pytest.raises(WarehouseError, match="cannot open the warehouse"),
        open_read_only(bad, lock_timeout_s=5),
    ):
        pass
    good = tmp_path / "good.duckdb"
    _write(good, "CREATE TABLE t AS SELECT 42 AS n")
    with open_read_only(good, lock_timeout_s=5) as con:
        assert con.execute("SELECT n FROM t").fetchall() == [(42,)]


def test_a_read_only_open_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    _write(path, "CREATE TABLE t (n INTEGER)")
    with open_read_only(path, lock_timeout_s=5) as con, pytest.raises(duckdb.Error):
        con.execute("INSERT INTO t VALUES (1)")


def test_a_forked_child_opens_the_warehouse_with_instances_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    _write(path, "CREATE TABLE t AS SELECT 7 AS n")  # leaves a warm instance in this process
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        status = 1
        try:
            with open_read_only(path, lock_timeout_s=5) as con:
                status = 0 if con.execute("SELECT n FROM t").fetchall() == [(7,)] else 2
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    with open_read_only(path, lock_timeout_s=5) as con:  # the parent's instances still serve
        assert con.execute("SELECT n FROM t").fetchall() == [(7,)]


THREADS_OF_AN_OPEN = """
import sys
from pathlib import Path
from pipelines.warehouse.read import open_read_only
with open_read_only(Path(sys.argv[1]), lock_timeout_s=5) as con:
    print(con.execute("SELECT current_setting('threads')").fetchone()[0])
"""


@pytest.mark.slow
def test_each_instance_runs_the_threads_the_installation_sets(tmp_path: Path) -> None:
    """CREDITLENS_DUCKDB_THREADS, read when an instance starts (a fresh process here: this one's
    instances are warm); unset, DuckDB's own default."""
    path = tmp_path / "warehouse.duckdb"
    _write(path, "CREATE TABLE t (n INTEGER)")
    with duckdb.connect() as con:
        default = con.execute("SELECT current_setting('threads')").fetchone()
    env = {k: v for k, v in os.environ.items() if k != "CREDITLENS_DUCKDB_THREADS"}
    for value, expected in (("3", "3"), (None, str(default[0]) if default else "")):
        child = env if value is None else {**env, "CREDITLENS_DUCKDB_THREADS": value}
        done = subprocess.run(
            [sys.executable, "-c", THREADS_OF_AN_OPEN, str(path)],
            env=child,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected, value


def test_a_bound_statement_does_not_search_the_path_for_pandas(tmp_path: Path) -> None:
    """DuckDB's client imports pandas before binding each parameter; without pandas each attempt
    searched all of ``sys.path`` (0.2 ms a parameter, some 3% of a sync-heavy test's CPU)."""
    import importlib.machinery

    if "pandas" in sys.modules or importlib.machinery.PathFinder.find_spec("pandas") is not None:
        pytest.skip("pandas is installed here: DuckDB imports it once")
    asked: list[str] = []

    class Recorder:
        def find_spec(self, name: str, path: object = None, target: object = None) -> None:
            asked.append(name)

    recorder = Recorder()
    sys.meta_path.append(recorder)  # asked only when no finder before it answered
    try:
        path = tmp_path / "warehouse.duckdb"
        _write(path, "CREATE TABLE probe (n INTEGER, label VARCHAR)")
        with open_for_write(path, lock_timeout_s=5) as con, transaction(con):
            con.execute("INSERT INTO probe VALUES (?, ?)", [1, "one"])
    finally:
        sys.meta_path.remove(recorder)
    assert not [name for name in asked if name.split(".")[0] == "pandas"]
    with pytest.raises(ModuleNotFoundError):
        import pandas  # noqa: F401


def _format(path: Path) -> str:
    with duckdb.connect(str(path), read_only=True) as con:
        row = con.execute(
            "SELECT tags['storage_version'] FROM duckdb_databases() "
            "WHERE database_name = current_database()"
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_a_new_warehouse_is_in_the_newer_format_and_an_old_one_keeps_its_own(
    tmp_path: Path,
) -> None:
    """1.0's format, DuckDB's default, costs four times as much to attach: new files are not in
    it; a file created in it stays so (DuckDB 1.4 may still be reading it)."""
    new = tmp_path / "new.duckdb"
    _write(new, "CREATE TABLE probe AS SELECT 1 AS n")
    assert _format(new).startswith(WAREHOUSE_STORAGE_VERSION)
    old = tmp_path / "old.duckdb"
    duckdb.connect(str(old)).close()
    assert _format(old).startswith("v1.0.0")
    _write(old, "CREATE TABLE probe AS SELECT 1 AS n")
    assert _format(old).startswith("v1.0.0")


def test_an_open_sets_its_limit_only_where_its_instance_holds_another(tmp_path: Path) -> None:
    """Setting a limit costs 1.5 ms: a warm instance that holds the open's already is left as
    it is, and one whose work set its own gets the open's again."""
    path = tmp_path / "warehouse.duckdb"
    _write(path, "CREATE TABLE probe (n INTEGER)")
    said: list[str] = []

    def limits(con: duckdb.DuckDBPyConnection) -> str:
        return str(con.execute("SELECT current_setting('memory_limit')").fetchone())

    with open_read_only(path, lock_timeout_s=5) as con:
        first = limits(con)
    with open_read_only(path, lock_timeout_s=5) as con:
        said.append(limits(con))
        limit_memory(con, "64MB")
        said.append(limits(con))
    with open_read_only(path, lock_timeout_s=5) as con:
        said.append(limits(con))
    assert said[0] == first and said[1] != first and said[2] == first
