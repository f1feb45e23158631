"""A benchmark contender that grows past its memory bound is stopped, with its figures kept.

The dlt peer grows with N (gigabytes at 200k); on a shared 2-core, 24 GB machine the benchmark
must stop it rather than let it take the machine, and report its time so far as a lower bound.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.peers.measured import ChildOverMemory, run_child

GROW = (
    "import time\n"
    "blocks = []\n"
    "for _ in range(60):\n"
    "    blocks.append(bytearray(20 * 1024 * 1024))\n"  # touched: resident, not just reserved
    "    time.sleep(0.02)\n"
    "time.sleep(30)\n"
)


def _python(tmp_path: Path, code: str, name: str, **bounds: Any) -> Any:
    """``python -c CODE`` run and measured as a benchmark runs its children."""
    return run_child(
        [sys.executable, "-c", code],
        env=dict(os.environ),
        cwd=tmp_path,
        timeout_s=60,
        log_dir=tmp_path,
        name=name,
        **bounds,
    )


def test_a_child_past_its_memory_bound_is_killed_with_its_figures(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ChildOverMemory) as over:
        _python(tmp_path, GROW, "grower", max_rss_mb=200)
    assert time.monotonic() - started < 20  # stopped at the bound, not at the end of its sleep
    assert over.value.peak_rss_mb > 200
    assert 0 < over.value.wall_s < 20
    assert "grower grew past 200 MB" in str(over.value)


def test_a_child_within_its_bound_runs_to_the_end(tmp_path: Path) -> None:
    run = _python(tmp_path, "print('done')", "small", max_rss_mb=2_000).check("small")
    assert run.stdout.strip() == "done"
    assert 0 < run.peak_rss_mb < 2_000


HOLDER = (
    "import subprocess, sys\n"
    "grandchild = 'import time; block = bytearray(150 * 1024 * 1024); time.sleep(1)'\n"
    "subprocess.run([sys.executable, '-c', grandchild], check=True)\n"
)


def test_the_tree_peak_counts_a_grandchild_the_parent_waits_for(tmp_path: Path) -> None:
    """The sampler reads each process's parent once, when it appears: a process started after
    the first sample, two levels down, is still found and its memory counted."""
    run = _python(tmp_path, HOLDER, "holder").check("holder")
    assert run.tree_peak_rss_mb > 150
    assert run.peak_rss_mb >= run.tree_peak_rss_mb
