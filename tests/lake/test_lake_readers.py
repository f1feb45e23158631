"""Analysts on the lake: docs/analysts.md's cookbook, every query, answers on the lake what it
answers on the file, read from the analyst's own DuckDB with the lake attached read-only, and
keeps answering the same while a sync writes the lake."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    print(f"lake readers: {reads} rounds of {len(queries)} cookbook queries during one sync")
