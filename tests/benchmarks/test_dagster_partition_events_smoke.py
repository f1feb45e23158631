"""The Dagster partition-events benchmark still runs: a few days, both settings, no timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_dagster_partition_events_runs_both_settings() -> None:
    command = [sys.executable, "-m", "benchmarks.dagster_partition_events"]
    command += ["--days", "3", "--repeats", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "3 daily partitions, Dagster's defaults:" in done.stdout
    assert "3 daily partitions, the CLI's ephemeral settings:" in done.stdout
    assert "ratio defaults / CLI settings:" in done.stdout
    assert "load average (1, 5, 15 min): " in done.stdout
