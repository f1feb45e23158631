"""The reconciliation memory benchmark still runs: tiny N, both modes, no timing assertions.

It also proves the benchmark compares like with like: both modes reconcile the same entries of
their own copies and write the same rows, and the original warehouse is left untouched. Each
mode's reconciliation, the copies and the digests stay children; the benchmark's own ``main``
runs in this process (tests/benchmarks/in_process.py), where it only starts them and prints.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from benchmarks.reconciliation_memory import main
from pipelines.warehouse.writer import Warehouse
from tests.benchmarks.in_process import run_main
from tests.reconciliation.warehouse_ledgers import land_ledger, land_snapshots
from tests.transforms.ledgers import Chain, ledger_frame


def _warehouse(path: Path) -> Path:
    """Twelve days of ten entries, ties and two hidden movements, one at a day boundary."""
    n = 120
    hours = [0, 0, 1, 1, 2, 3, 3, 4, 5, 23]  # each day ends on an entry alone at its time
    offsets = [timedelta(days=i // 10, hours=hours[i % 10]) for i in range(n)]
    amounts = [Decimal(-1 - i % 3) if i % 7 else Decimal(25) for i in range(n)]
    chain = Chain(amounts, offsets, gaps={40: Decimal("0.5"), 77: Decimal(-2)})
    warehouse = Warehouse(path, lock_timeout_s=60)
    land_ledger(warehouse, ledger_frame(chain))
    land_snapshots(warehouse, "acme", balance=Decimal(1), period=None)
    return path


@pytest.mark.slow
def test_reconciliation_memory_benchmark_runs_and_modes_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = _warehouse(tmp_path / "warehouse.duckdb")
    fingerprint = hashlib.sha256(original.read_bytes()).hexdigest()
    out = tmp_path / "figures.json"
    argv = ["--warehouse", str(original), "--entries", "60,120", "--slice-entries", "10"]
    done = run_main(main, [*argv, "--out", str(out)], capsys)
    assert done.code == 0, done.out[-3000:] + done.err[-3000:]
    figures = json.loads(out.read_text())
    assert figures["problems"] == []
    runs = {(r["size"], r["mode"]): r for r in figures["runs"]}
    assert set(runs) == {(60, "whole"), (60, "sliced"), (120, "whole"), (120, "sliced")}
    for size in (60, 120):
        whole, sliced = runs[(size, "whole")], runs[(size, "sliced")]
        assert whole["slices"] == 1 and sliced["slices"] > 1
        assert whole["digest"] == sliced["digest"]
        assert whole["peak_rss_mb"] > 0 and sliced["peak_rss_mb"] > 0
    assert runs[(60, "sliced")]["continuity_breaks"] == 1  # the first 6 days hold one gap
    assert runs[(120, "sliced")]["continuity_breaks"] == 2
    assert set(figures["growth_exponent"]) == {"whole", "sliced"}
    assert "peak RSS MB" in done.out and "identical in both modes: yes" in done.out
    assert "load average (1, 5, 15 min): " in done.out
    assert hashlib.sha256(original.read_bytes()).hexdigest() == fingerprint
