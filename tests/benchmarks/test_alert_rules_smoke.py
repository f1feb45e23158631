"""The alert benchmark still syncs and times every kind of rule (no timing assertions)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_alert_rules_benchmark_times_both_evaluations() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.alert_rules", "--accounts", "2", "--entries", "300"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(
        r"alerts: 7 rules x 2 accounts: first evaluation [\d.]+s \(\d+ changes\), next [\d.]+s",
        done.stdout,
    ), done.stdout
    assert "load average" in done.stdout
