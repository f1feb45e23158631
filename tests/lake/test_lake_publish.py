"""The analyst copy of a lake: each publish asks the lake which tables its snapshots wrote since
the last one and reads only those, and the copy stays the lake, row for row."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from pipelines.config.settings import Settings
from pipelines.warehouse.analyst_parts import MANIFEST
from pipelines.warehouse.publish import analyst_parquet_dir, publish_now
from pipelines.warehouse.writer import Warehouse
from tests.conftest import serving
from tests.lake.conftest import lake_answers
from tests.lake.test_lake import _one_company_env
from tests.pipeline.helpers import cli_in_process

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


@pytest.mark.slow
def test_a_lake_publish_reads_only_what_a_snapshot_wrote_and_the_copy_stays_the_lake(
    tmp_path: Path, lake_location: str
) -> None:
    with serving("small") as s:
        env = _one_company_env(s, tmp_path, lake_location)
        done = cli_in_process("sync", env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        warehouse = Warehouse(Settings.from_env(env).warehouse, lock_timeout_s=30)
        path, copy = warehouse.path, warehouse.analyst_copy
        [tables] = [[t for (t,) in rows] for rows in lake_answers(lake_location, [TABLES])]
        assert len(tables) > 20

        # Nothing written since the sync's own publish: no table read, nothing rewritten.
        quiet = publish_now(path, copy, 30)
        assert (quiet.fingerprinted, quiet.rewritten) == (0, 0)

        # One row in one table: that table alone is read, and the copy has the row.
        with warehouse.write() as con:
            con.execute(
                "INSERT INTO sync_outcomes (sync_id, account, step, recorded_at, result) "
                "VALUES ('by-hand', 'acme', 'ledger', now(), 'ok')"
            )
        one = publish_now(path, copy, 30)
        assert one.fingerprinted == 1 and one.rewritten >= 1, one
        with duckdb.connect(str(copy), read_only=True) as con:
            found = con.execute("SELECT count(*) FROM sync_outcomes WHERE sync_id = 'by-hand'")
            assert found.fetchone() == (1,)

        # A later sync re-lands, reconciles and records: the copy is the lake, every table.
        again = cli_in_process("sync", env=env)
        assert again.returncode == 0, again.stderr[-2000:]
        assert _copy_rows(copy, tables) == _lake_rows(lake_location, tables)

        # A manifest naming a snapshot the lake does not have as it was (the lake made again
        # at the same place, its old snapshots expired): every table is read again.
        manifest = analyst_parquet_dir(copy) / MANIFEST
        data = json.loads(manifest.read_text())
        data["lake_snapshot"][1] = "1999-01-01 00:00:00+00"
        manifest.write_text(json.dumps(data))
        with warehouse.write() as con:
            con.execute("DELETE FROM sync_outcomes WHERE sync_id = 'by-hand'")
        unknown = publish_now(path, copy, 30)
        assert unknown.fingerprinted == len(tables), unknown
        assert _copy_rows(copy, tables) == _lake_rows(lake_location, tables)
