"""The persistent-against-ephemeral benchmark still runs: a tiny company, one round, no timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_instance_benchmark_runs_both_modes() -> None:
    command = [sys.executable, "-m", "benchmarks.dagster_instance"]
    command += ["--entries", "200", "--history-days", "10", "--repeats", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    for line in (
        "ephemeral instance, 10 days:",
        "persistent instance, daily sync, 8 days:",
        "persistent - ephemeral, backfill:",
    ):
        assert line in done.stdout, done.stdout
