"""Analysts on the lake: docs/analysts.md's cookbook, every query, answers on the lake what it
answers on the file, read from the analyst's own DuckDB with the lake attached read-only, and
keeps answering the same while a sync writes the lake. The analyst copy stays the lake, row for
row, while each publish reads only the tables a lake snapshot wrote since the last one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from pipelines.config.settings import Settings
from pipelines.warehouse.analyst_parts import MANIFEST
from pipelines.warehouse.publish import analyst_parquet_dir, publish_now
from pipelines.warehouse.writer import Warehouse
from tests.conftest import serving
from tests.lake.conftest import file_rows, lake_answers
from tests.lake.test_lake import _one_company_env
from tests.pipeline.helpers import cli_in_process
from tests.pipeline.test_cookbook import cookbook


@pytest.mark.slow
def test_the_cookbook_answers_on_the_lake_while_a_sync_writes(
    tmp_path: Path, lake_location: str
) -> None:
    queries = cookbook()
    assert len(queries) >= 5
    with serving("hidden_movements") as s:
        warehouse = tmp_path / "file" / "warehouse.duckdb"
        file_env = _one_company_env(s, tmp_path / "file", str(warehouse))
        lake_env = _one_company_env(s, tmp_path / "lake", lake_location)
        for env in (file_env, lake_env):
            done = cli_in_process("sync", env=env)
            assert done.returncode == 0, done.stderr[-2000:]
        expected = [file_rows(warehouse, q) for q in queries]
        # most answer something on any date ("this year" may be empty just past New Year)
        assert sum(map(bool, expected)) >= len(queries) - 1, "the test would prove little"
        assert lake_answers(lake_location, queries) == expected
        # A daily sync re-lands the last days while the analyst reads: every read sees one
        # snapshot or the next, and both answer alike (the same entries, replaced whole).
        daily = subprocess.Popen(
            [sys.executable, "-m", "pipelines.cli", "sync"],
            env={**os.environ, **lake_env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        reads = 0
        while daily.poll() is None or reads == 0:
            assert lake_answers(lake_location, queries) == expected
            reads += 1
            time.sleep(0.2)  # an analyst's pace: a busy loop only starved the sync of the CPU
        _, err = daily.communicate(timeout=240)
        assert daily.returncode == 0, err[-2000:]
        assert lake_answers(lake_location, queries) == expected
        _the_copy_is_the_lake_and_each_publish_reads_what_changed(lake_env, lake_location)
    print(f"lake readers: {reads} rounds of {len(queries)} cookbook queries during one sync")


TABLES = (
    "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
    "AND schema_name = 'main' ORDER BY 1"
)


def _copy_rows(copy: Path, tables: list[str]) -> list[list[tuple]]:
    with duckdb.connect(str(copy), read_only=True) as con:
        return [sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables]


def _lake_rows(location: str, tables: list[str]) -> list[list[tuple]]:
    answers = lake_answers(location, [f"SELECT * FROM {t}" for t in tables])
    return [sorted(rows, key=repr) for rows in answers]


def _the_copy_is_the_lake_and_each_publish_reads_what_changed(
    env: dict[str, str], location: str
) -> None:
    """After a first and a daily sync, each publish having read only what a snapshot wrote."""
    warehouse = Warehouse(Settings.from_env(env).warehouse, lock_timeout_s=30)
    path, copy = warehouse.path, warehouse.analyst_copy
    # Nothing written since the sync's own publish: no table read, nothing rewritten.
    quiet = publish_now(path, copy, 30)
    assert (quiet.fingerprinted, quiet.rewritten) == (0, 0)

    # One row in one table: that table alone is read, and the copy is the lake, every table
    # (each publish since the first sync's read only what a snapshot wrote).
    with warehouse.write() as con:
        con.execute(
            "INSERT INTO sync_outcomes (sync_id, account, step, recorded_at, result) "
            "VALUES ('by-hand', 'acme', 'ledger', now(), 'ok')"
        )
    one = publish_now(path, copy, 30)
    assert one.fingerprinted == 1 and one.rewritten >= 1, one
    [tables] = [[t for (t,) in rows] for rows in lake_answers(location, [TABLES])]
    assert len(tables) > 20
    assert _copy_rows(copy, tables) == _lake_rows(location, tables)

    # A manifest naming a snapshot the lake does not have as it was (the lake made again at
    # the same place, its old snapshots expired): every table is read again.
    manifest = analyst_parquet_dir(copy) / MANIFEST
    data = json.loads(manifest.read_text())
    data["lake_snapshot"][1] = "1999-01-01 00:00:00+00"
    manifest.write_text(json.dumps(data))
    with warehouse.write() as con:
        con.execute("DELETE FROM sync_outcomes WHERE sync_id = 'by-hand'")
    unknown = publish_now(path, copy, 30)
    assert unknown.fingerprinted == len(tables), unknown
    with duckdb.connect(str(copy), read_only=True) as con:
        gone = con.execute("SELECT count(*) FROM sync_outcomes WHERE sync_id = 'by-hand'")
        assert gone.fetchone() == (0,)
