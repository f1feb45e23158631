"""The sync phase timer still runs a real sync and stamps its phases (no timing assertions)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.peers.creditlens_sync import sync_environment
from tests.conftest import Simulated

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_sync_phases_stamps_each_phase_of_a_real_sync(
    simulated: Callable[..., Simulated], tmp_path: Path
) -> None:
    s = simulated("small")
    env = sync_environment(s.url, s.key, s.company, tmp_path, s.first_day)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.sync_phases", "--since", s.first_day.isoformat()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    finished = set(re.findall(r"< (\w+) [\d.]+s", done.stderr))
    assert {
        "instance",
        "run_job",
        "stage_windows",
        "land_ledgers",
        "land_snapshots",
        "publish_now",
    } <= finished
    assert "] end" in done.stderr
    assert "landed" in done.stdout  # the sync's own summary, unchanged
