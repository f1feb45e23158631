"""The analyst-copy benchmark still syncs and times each kind of publish (no timing assertions).

Its ``main`` runs in this process (tests/benchmarks/in_process.py): the benchmark syncs and
publishes in its own process, a child of the test's would only import Dagster again.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.analyst_copy import main
from tests.benchmarks.in_process import run_main


@pytest.mark.slow
def test_analyst_copy_benchmark_times_each_publish_beside_the_whole_file_copy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 45 days: still two months, so a changed day rewrites its month's part and not the other's,
    # with an eighth of a year's daily partitions to sync.
    argv = ["--accounts", "2", "--entries", "300", "--repeats", "1", "--history-days", "45"]
    done = run_main(main, argv, capsys)
    assert done.code == 0, done.out[-2000:] + done.err[-2000:]
    out = done.out
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
