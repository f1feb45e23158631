"""The daily reconciliation benchmark still runs: tiny sizes, no timing assertions.

It also proves what it compares: the step it times is an incremental pass, and that pass wrote
the same rows as a full one; the original warehouse is left untouched. The run's children make
it ``slow`` (the copies and each size's reconciliation; the benchmark's own ``main`` runs in
this process, tests/benchmarks/in_process.py, where it only starts them and prints); the growth
figure it reports is read here in the inner loop.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from benchmarks.reconciliation_daily import SizeRun, growth, main
from tests.benchmarks.in_process import run_main
from tests.benchmarks.test_reconciliation_memory_smoke import _warehouse


@pytest.mark.slow
def test_daily_reconciliation_benchmark_runs_incrementally_and_agrees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = _warehouse(tmp_path / "warehouse.duckdb")
    fingerprint = hashlib.sha256(original.read_bytes()).hexdigest()
    out = tmp_path / "figures.json"
    argv = ["--warehouse", str(original), "--entries", "60,120", "--lookback", "2"]
    done = run_main(main, [*argv, "--out", str(out)], capsys)
    assert done.code == 0, done.out[-3000:] + done.err[-3000:]
    figures = json.loads(out.read_text())
    assert figures["problems"] == []
    runs = {r["size"]: r for r in figures["runs"]}
    assert set(runs) == {60, 120}
    for run in runs.values():
        assert run["same_rows"] is True
        assert run["pass_kind"].startswith("incremental from ")
    assert runs[120]["pass_kind"] == "incremental from 2025-01-10"  # 12 days, lookback 2
    assert figures["incremental_growth"] is not None
    assert "target within 1.2x" in done.out and "load average" in done.out
    assert hashlib.sha256(original.read_bytes()).hexdigest() == fingerprint


def _size(size: int, incremental_s: float) -> SizeRun:
    return SizeRun(size, 1.0, incremental_s, 1.0, "incremental from 2025-01-10", True, 1.0, 1.0)


def test_growth_is_the_largest_sizes_incremental_step_over_the_smallests() -> None:
    assert growth([_size(1_000_000, 0.6), _size(100_000, 0.5)]) == pytest.approx(1.2)
    assert growth([_size(100_000, 0.5)]) is None  # one size: nothing to compare
    assert growth([_size(100_000, 0.0), _size(1_000_000, 0.6)]) is None  # no step to divide by
