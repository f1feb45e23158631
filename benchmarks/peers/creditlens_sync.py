"""creditlens as a user runs it: `creditlens sync --since FIRST --until LAST`, end to end.

A fresh warehouse per run, configured only through CREDITLENS_* variables, no DAGSTER_HOME: the
runs are recorded in the default persistent instance beside the warehouse, as a first run on a
laptop (``extra_env`` may choose another, as benchmarks/dagster_instance.py does). The whole
process is timed, Python start-up, Dagster, snapshots and the analyst copy included; the
ledger's own figure is read back from the summary line the command prints.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb

from benchmarks.peers.measured import ChildRun, run_child
from pipelines.settings import AccountSettings, Settings

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(
    r"fetched (\d+), landed (\d+), quarantined (\d+) \((\d+) windows, (\d+) pages, ([\d.]+)s\)"
)


@dataclass(frozen=True)
class CreditlensRun:
    run: ChildRun
    # SUMMARY's figures, in its order.
    fetched: int
    landed: int
    quarantined: int
    windows: int
    pages: int
    ledger_s: float
    rows_in_warehouse: int


def sync_environment(
    base_url: str, key: str, account: str, workdir: Path, first: date
) -> dict[str, str]:
    """A user's shell for this run: the settings' own variables, and the key in the variable the
    account names."""
    settings = Settings(
        warehouse=workdir / "warehouse.duckdb",
        ledger_start=first,
        audit_state_dir=workdir / "audit-state",
        accounts=(AccountSettings(name=account, base_url=base_url),),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREDITLENS_", "DAGSTER_"))}
    env.update(settings.to_env())
    env[settings.account.api_key_env] = key
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_creditlens(
    base_url: str,
    key: str,
    account: str,
    first: date,
    last: date,
    workdir: Path,
    *,
    timeout_s: float,
    python: str = sys.executable,
    extra_env: Mapping[str, str] | None = None,
    ledger_start: date | None = None,
) -> CreditlensRun:
    """``ledger_start``: where the ledger begins when the sync starts later (default: ``first``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = [python, "-m", "pipelines.cli", "sync"]
    command += ["--since", first.isoformat(), "--until", last.isoformat()]
    env = sync_environment(base_url, key, account, workdir, ledger_start or first)
    run = run_child(
        command,
        env={**env, **(extra_env or {})},
        cwd=ROOT,
        timeout_s=timeout_s,
        log_dir=workdir,
        name="creditlens-sync",
    ).check("creditlens sync")
    match = SUMMARY.search(run.stdout)
    if match is None:
        raise RuntimeError(f"creditlens sync printed no ledger summary:\n{run.stdout[-2000:]}")
    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM ledger_entries").fetchone()
    *counts, ledger_s = match.groups()
    # The summary's figures come in the order of the fields after ``run``.
    return CreditlensRun(run, *(int(c) for c in counts), float(ledger_s), int(row[0]) if row else 0)
