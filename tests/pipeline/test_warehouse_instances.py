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
        con.execute("SET memory_limit = '64MB'")  # as the reconciliation's commit does
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
