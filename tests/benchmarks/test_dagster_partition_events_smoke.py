"""The Dagster partition-events benchmark still runs: a few days, both settings, no timing.

Its ``main`` runs in this process (same parsing, output and exit code): every setting it
measures is already a `python -m benchmarks.dagster_partition_events --child` process, so the
module's entry point is proven by those; a parent process of its own would only import Dagster
once more. The module is imported inside the test, so the warning filter it sets at import is
undone with the test's own (pytest restores the filters after each test).
"""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_dagster_partition_events_runs_both_settings(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.dagster_partition_events import main

    code = main(["--days", "3", "--repeats", "1"])
    done = capsys.readouterr()
    assert code == 0, done.out[-2000:] + done.err[-2000:]
    assert "3 daily partitions, Dagster's defaults:" in done.out
    assert "3 daily partitions, the CLI's ephemeral settings:" in done.out
    assert "ratio defaults / CLI settings:" in done.out
    assert "load average (1, 5, 15 min): " in done.out
