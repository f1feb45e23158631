"""The ingestion benchmark still runs: tiny N, no dlt peer, no timing assertions.

It starts its own simulator process and a real `creditlens sync` subprocess, so it also proves
the benchmark compares like with like: creditlens lands exactly the entries the floor fetched.
Those contenders stay children; the benchmark's own ``main`` runs in this process
(tests/benchmarks/in_process.py), where it only starts them and prints.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.ingestion import main
from tests.benchmarks.in_process import run_main


@pytest.mark.slow
def test_ingestion_benchmark_runs_and_counts_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "figures.json"
    argv = ["--entries", "2000", "--skip-peer", "--floor-levels", "1,async2,procs2"]
    argv += ["--floor-repeats", "1", "--out", str(out)]
    argv += ["--history-days", "400"]  # still two API windows, fewer daily partitions
    # Nothing here is timed: the first child fills the bytecode cache as it goes (the modules
    # the warm-up import names are checked in tests/benchmarks/test_network_smoke.py), and the
    # sync records its runs in an ephemeral Dagster instance, as tests/conftest.py's syncs do.
    argv += ["--skip-warm-up", "--dagster-instance", "ephemeral"]
    done = run_main(main, argv, capsys)
    assert done.code == 0, done.out[-3000:] + done.err[-3000:]
    figures = json.loads(out.read_text())
    (size,) = figures["sizes"]
    fetched_by_floor = {m["entries"] for m in size["floor"]}
    assert len(fetched_by_floor) == 1
    entries = fetched_by_floor.pop()
    assert entries > 1000
    synced = size["creditlens"]["detail"]
    assert synced["fetched"] == entries
    assert synced["landed"] + synced["quarantined"] == entries
    assert synced["rows_in_warehouse"] == synced["landed"]
    assert size["peer"] is None
    assert size["problems"] == []
    assert {"cores", "memory_gb", "python", "date"} <= figures["machine"].keys()
    assert "creditlens sync" in done.out and "floor threads x1" in done.out
    assert all(m["detail"]["retries"] == 0 for m in size["floor"])  # counted, none needed here
    assert "0 transport retries" in done.out
    assert "load average (1, 5, 15 min): " in done.out
    assert len(figures["machine"]["loadavg_end"]) == 3
