"""The Dagster partition-events benchmark still runs: a few days, both settings, no timing.

Its ``main`` runs in this process (same parsing, output and exit code), and every setting in one
`python -m benchmarks.dagster_partition_events --child` process (``--one-child``): that child
proves the module's entry point and each setting's run, its variables set as a child of its own
would have them; four children, or a parent process of its own, would only import Dagster again.
The module is imported inside the test, so the warning filter it sets at import is undone with
the test's own (pytest restores the filters after each test).
"""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_dagster_partition_events_runs_both_settings(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.dagster_partition_events import main

    code = main(["--days", "3", "--repeats", "1", "--one-child"])
    done = capsys.readouterr()
    assert code == 0, done.out[-2000:] + done.err[-2000:]
    assert "3 daily partitions, Dagster's defaults:" in done.out
    assert "3 daily partitions, the CLI's ephemeral settings:" in done.out
    assert "ratio defaults / CLI settings:" in done.out
    assert "load average (1, 5, 15 min): " in done.out
