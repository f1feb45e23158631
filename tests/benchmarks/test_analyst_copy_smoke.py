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
        # 45 days: still two months, so a changed day rewrites its month's part and not the
        # other's, with an eighth of a year's daily partitions to sync.
        [sys.executable, "-m", "benchmarks.analyst_copy", "--accounts", "2", "--entries", "300",
         "--repeats", "1", "--history-days", "45"],
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


def test_the_whole_file_copy_it_compares_with_is_the_old_publish(tmp_path: Path) -> None:
    """The baseline is what every publish did before: the warehouse byte for byte, renamed into
    place, no partial file left."""
    from benchmarks.analyst_copy import whole_file_copy
    from pipelines.warehouse.writer import Warehouse

    warehouse = Warehouse(tmp_path / "w.duckdb", lock_timeout_s=5)
    warehouse.ensure()
    target = tmp_path / "old-copy.duckdb"
    whole_file_copy(warehouse, target)
    assert target.read_bytes() == warehouse.path.read_bytes()
    assert not list(tmp_path.glob("*.partial"))
