"""The persistent-against-ephemeral benchmark still runs: a tiny company, one round, no timing.

Its ``main`` runs in this process (tests/benchmarks/in_process.py): what it measures, each sync
and its start-up, is a `creditlens sync` child of its own and stays one (four of them: each
mode's backfill and daily sync); the process around them only starts them and prints. They
read compiled bytecode from the suite's cache (tests/conftest.py), as an installed package's
children would.
"""

from __future__ import annotations

import pytest

from benchmarks.dagster_instance import main
from tests.benchmarks.in_process import run_main


@pytest.mark.slow
def test_the_instance_benchmark_runs_both_modes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--entries", "200", "--history-days", "10", "--repeats", "1"]
    done = run_main(main, argv, capsys)
    assert done.code == 0, done.out[-2000:] + done.err[-2000:]
    for line in (
        "ephemeral instance, 10 days:",
        "persistent instance, daily sync, 8 days:",
        "persistent - ephemeral, backfill:",
    ):
        assert line in done.out, done.out
