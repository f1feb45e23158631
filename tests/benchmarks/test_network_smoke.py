"""The network benchmarks still run: tiny sizes, a near network, no timing assertions.

Each starts its own steered simulator and real `creditlens sync` subprocesses, so it also proves
the figures compare like with like: creditlens lands exactly what the floor counted, and the
server's own count of requests backs the floor's arithmetic.

The sync children are what each run proves, and they stay children. The benchmark's own process
around them is not: one run (``daily``) goes through `python -m benchmarks.network` as a user
types it; the others call the same ``main`` in this process (same parsing, output and exit
code), sparing an interpreter start each that proves nothing the first run does not. No run
takes the warm-up import that fills the bytecode cache (``--skip-warm-up``: a smoke times
nothing, and its first child fills the cache as it goes); the modules it names are checked below,
and every sync child imports them. The daily run's two syncs record their runs in the product's
default, a persistent Dagster instance beside the warehouse; the others' in an ephemeral one
(``--dagster-instance ephemeral``, a second less a sync), as tests/conftest.py's syncs do: what
they prove is the benchmark's counts, not the instance.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import tomllib
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.machine import WARM_IMPORTS
from benchmarks.network.cli import main
from benchmarks.network.phases import phases
from benchmarks.peers.creditlens_sync import accounts_environment, ledger_lines

ROOT = Path(__file__).resolve().parents[2]
NEAR = ["--latency-ms", "5", "--entries", "2000"]


def _figures(out: Path, stdout: str) -> dict[str, Any]:
    figures = json.loads(out.read_text())
    assert figures["problems"] == []
    assert {"cores", "memory_gb", "python", "date"} <= figures["machine"].keys()
    assert "load average (1, 5, 15 min): " in stdout  # beside every benchmark's figures
    return figures


def _run_child(tmp_path: Path, *args: str) -> tuple[dict[str, Any], str]:
    """The entry point as a user runs it, warm-up import included."""
    out = tmp_path / "figures.json"
    command = [sys.executable, "-m", "benchmarks.network", *args, "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return _figures(out, done.stdout), done.stdout


Run = Callable[..., tuple[dict[str, Any], str]]


@pytest.fixture
def run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Run:
    """``main`` in this process (its children read the suite's bytecode cache, tests/conftest.py);
    the sync's bound is the child run's 240 s."""

    def run_main(*args: str) -> tuple[dict[str, Any], str]:
        out = tmp_path / "figures.json"
        options = ["--skip-warm-up", "--dagster-instance", "ephemeral", "--sync-timeout-s", "240"]
        code = main([*args, *options, "--out", str(out)])
        captured = capsys.readouterr()
        assert code == 0, captured.out[-3000:] + captured.err[-3000:]
        return _figures(out, captured.out), captured.out

    return run_main


@pytest.mark.slow
def test_rate_limited_counts_the_floor_and_the_servers_requests(run: Run) -> None:
    figures, stdout = run(
        "rate-limited",
        *NEAR,
        "--rate-limit",
        "200/s",
        "--skip-peer",
        "--history-days",
        "400",
    )
    f = figures["figures"]
    assert f["requests_needed"] > 20  # two windows of ~1000 entries at pageSize 100
    assert f["rate_floor_s"] == pytest.approx(f["requests_needed"] / 200)
    assert f["creditlens_requests_served"] >= f["requests_needed"]
    assert f["creditlens_server_errors"] == 0
    assert f["peer"] is None
    assert "| creditlens sync |" in stdout and "rate floor" in stdout


@pytest.mark.slow
def test_unlimited_puts_creditlens_beside_the_floor_levels(run: Run) -> None:
    figures, stdout = run(
        "unlimited",
        *NEAR,
        "--floor-levels",
        "1,async4",
        "--history-days",
        "60",
    )
    f = figures["figures"]
    assert {m["contender"] for m in f["floor"]} == {"floor threads x1", "floor async x4"}
    assert f["floor_retries"] == 0 and "0 transport retries" in stdout
    assert f["creditlens_over_floor"] > 0
    assert f["creditlens_concurrency"]
    assert "floor async x4" in stdout


@pytest.mark.slow
def test_accounts_with_one_account_uses_the_environment(run: Run) -> None:
    figures, _ = run(
        "accounts",
        *NEAR,
        "--accounts",
        "1",
        "--rate-limit",
        "200/s",
        "--history-days",
        "60",
    )
    f = figures["figures"]
    assert f["configured_by"] == "CREDITLENS_* variables"
    (account,) = f["per_account"]
    assert account["ledger"]["fetched"] == account["entries"] > 0
    assert f["creditlens_peak_rss_mb"] > 0


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("pipelines.config.accounts_file") is None,
    reason="creditlens has no accounts file yet",
)
def test_accounts_file_syncs_every_account_in_one_process(run: Run) -> None:
    figures, stdout = run(
        "accounts",
        *NEAR,
        "--accounts",
        "3",
        "--rate-limit",
        "200/s",
        "--history-days",
        "60",
    )
    f = figures["figures"]
    assert f["configured_by"] == "accounts file"
    assert [a["account"] for a in f["per_account"]] == ["company-01", "company-02", "company-03"]
    assert all(a["ledger"]["fetched"] == a["entries"] for a in f["per_account"])
    assert "| company-03 |" in stdout


@pytest.mark.slow
def test_daily_reads_the_lookback_and_lists_the_phases(tmp_path: Path) -> None:
    options = ["--skip-warm-up", "--dagster-instance", "ephemeral"]
    figures, stdout = _run_child(tmp_path, "daily", *NEAR, "--history-days", "30", *options)
    f = figures["figures"]
    (days,) = f["ranges"].values()
    first, last = days.split("..")
    assert last == "2026-06-30" and first == "2026-06-22"  # the backfill's last day - 7
    assert {"stage_windows", "land_ledgers", "land_snapshots"} <= {p["phase"] for p in f["phases"]}
    assert f["warehouse_entries"] > f["daily_entries_fetched"] > 0
    assert "phases of the daily sync" in stdout


def test_the_warm_up_imports_modules_that_exist() -> None:
    """What a measured run imports before its children start (the smokes skip it): one import
    statement of modules that are there, each imported by every sync child as well."""
    statements = ast.parse(WARM_IMPORTS).body
    assert [type(node) for node in statements] == [ast.Import]
    names = [
        alias.name for node in statements if isinstance(node, ast.Import) for alias in node.names
    ]
    assert "pipelines.cli.sync_command" in names
    assert all(importlib.util.find_spec(name) is not None for name in names), names


def test_accounts_file_names_each_key_variable_and_holds_no_key(tmp_path: Path) -> None:
    env = accounts_environment(
        "http://127.0.0.1:1",
        [("company-01", "secret-one"), ("company-02", "secret-two")],
        tmp_path,
        date(2024, 7, 1),
        concurrency=2,
    )
    text = Path(env["CREDITLENS_CONFIG"]).read_text()
    assert "secret" not in text
    config = tomllib.loads(text)
    assert config["defaults"] == {"base_url": "http://127.0.0.1:1"}
    assert config["accounts"] == [
        {"name": "company-01", "api_key_env": "BENCH_KEY_01"},
        {"name": "company-02", "api_key_env": "BENCH_KEY_02"},
    ]
    assert env["BENCH_KEY_02"] == "secret-two"
    assert env["CREDITLENS_ACCOUNT_CONCURRENCY"] == "2"
    assert "CREDITLENS_ACCOUNT" not in env and "CREDITLENS_BASE_URL" not in env


def test_ledger_lines_read_the_single_and_the_per_account_forms() -> None:
    stdout = (
        "history: first entry 2025-05-27T00:00:00.000000Z (14 requests)\n"
        "ledger 2025-05-27..2026-06-30: fetched 2077, landed 2077, quarantined 0 "
        "(3 windows, 26 pages, 0.317s)\n"
        "company-02: history: the ledger begins 2024-06-30; ledger 2024-07-01..2026-06-30: "
        "fetched 20000, landed 19990, quarantined 10 (3 windows, 203 pages, 10.2s), "
        "concurrency 6; snapshots: 4 stored\n"
    )
    lines = ledger_lines(stdout)
    assert lines[None].fetched == 2077 and lines[None].pages == 26 and lines[None].reported == {}
    company = lines["company-02"]
    assert (company.landed, company.quarantined, company.ledger_s) == (19990, 10, 10.2)
    assert company.reported == {"concurrency": 6}


def test_phases_name_the_jobs_in_the_order_a_sync_runs_them() -> None:
    stderr = (
        "[   1.50s] imported the CLI\n[   1.80s] imported the sync\n[   2.00s] > run_job\n"
        "[   2.40s] < stage_windows 0.30s\n[   3.00s] < run_job 1.00s\n[   4.00s] < run_job 0.45s\n"
        "[   4.10s] end\n"
    )
    steps = phases(stderr, wall_s=4.5)
    assert [p["phase"] for p in steps] == [
        "importing the CLI",
        "importing the sync",
        "stage_windows",
        "run_job ledger_and_snapshot_sync",
        "run_job reconciliation_run",
        "outside the stamps (start, exit)",
    ]
    assert steps[-1]["took_s"] == pytest.approx(0.4)
