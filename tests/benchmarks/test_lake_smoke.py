"""`python -m benchmarks.lake` still runs: a tiny agency into a file and a lake, one process
against two (its figures are not read; benchmarks/RESULTS.md holds them)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks.harness.postgres import PostgresMissing, running_postgres


@pytest.mark.slow
def test_the_lake_benchmark_runs_both_backends_and_two_processes() -> None:
    try:
        with running_postgres():
            pass
    except PostgresMissing as missing:
        pytest.skip(str(missing))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.lake", "--accounts", "2", "--entries", "40",
         "--rounds", "1", "--history-days", "5"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    for line in ("first sync lake/file:", "daily sync lake/file:", "two/one:", "load average"):
        assert line in done.stdout, done.stdout
