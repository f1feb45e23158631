"""The analyst-copy benchmark still syncs and times each kind of publish (no timing assertions)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_analyst_copy_benchmark_times_each_publish_beside_the_whole_file_copy() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.analyst_copy", "--accounts", "2", "--entries", "300",
         "--repeats", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = done.stdout
    assert re.search(r"whole-file copy \(before\): [\d.]+s", out), out
    assert re.search(r"nothing changed: [\d.]+s \([\d.]+x the copy\)", out), out
    assert re.search(r"one account's day changed: .*, 1 parts rewritten\)", out), out
    assert re.search(r"a day changed in every account: .*, 2 parts rewritten\)", out), out
    assert "load average" in out
