"""The benchmark of the CLI's one-connection storage against Dagster's own still runs: a tiny
company, one round, no timing (``main`` in this process, tests/benchmarks/in_process.py; every
sync it runs is a child of its own); and its report says what the pairs mean."""

from __future__ import annotations

import pytest

from benchmarks.dagster_storage import main, report
from tests.benchmarks.in_process import run_main


def test_the_report_gives_medians_the_pairs_and_the_saving() -> None:
    daily = {"ours": [4.0, 5.0, 4.4], "dagster": [4.4, 5.0, 4.6]}
    lines = report(daily, {"ours": 9.0, "dagster": 20.0}, "1 account of 200 entries")
    assert lines[0].startswith("the CLI's one-connection storage, daily sync of 1 account")
    assert "median 4.40s (rounds 4.00 / 5.00 / 4.40; first sync 9.00s)" in lines[0]
    assert "median 4.60s" in lines[1] and "first sync 20.00s" in lines[1]
    assert lines[2] == "the CLI's / Dagster's, pair by pair: 0.909 1.000 0.957; median 0.957"
    assert lines[3].startswith("the CLI's storage saves 4.3% of a daily sync")
    assert lines[3].endswith("use Dagster's own storage")
    faster = report({"ours": [4.0], "dagster": [5.0]}, {"ours": 1.0, "dagster": 1.0}, "x")
    assert faster[3].endswith("keep the CLI's storage")


@pytest.mark.slow
def test_the_storage_benchmark_runs_both_storages(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--entries", "200", "--history-days", "10", "--repeats", "1", "--skip-warm-up"]
    done = run_main(main, argv, capsys)
    assert done.code == 0, done.out[-2000:] + done.err[-2000:]
    for line in (
        "the CLI's one-connection storage, daily sync of 1 account of 200 entries: median ",
        "Dagster's own SQLite storage, daily sync of 1 account of 200 entries: median ",
        "the CLI's / Dagster's, pair by pair: ",
        "the CLI's storage saves ",
        "load average (1, 5, 15 min): ",
    ):
        assert line in done.out, done.out
