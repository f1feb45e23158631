"""What Dagster itself costs a backfill run, before any ledger entry: an empty daily-partitioned
asset materialized over N days in one run (the ledger asset's single-run backfill).

On an ephemeral instance, with Dagster's default event settings and with the ones the CLI sets
for a run whose instance dies with it; then on a persistent instance in a fresh folder (what
`creditlens sync` records its runs in by default), with Dagster's own SQLite storage and with the
CLI's, which writes a batch of events in one transaction (pipelines.dagster_home.storage.py), both
with the CLI's persistent settings (pipelines/cli/runner.py). Each setting runs in its own child
process, so none inherits another's imports or instance (``--one-child``, for a smoke run that
times nothing, runs them all in one child, one after the other).

    python -m benchmarks.dagster_partition_events [--days 730] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from dagster import (
    BackfillPolicy,
    BetaWarning,
    DagsterInstance,
    DailyPartitionsDefinition,
    Definitions,
    MaterializeResult,
    asset,
    define_asset_job,
)

from benchmarks.harness.machine import load_line
from pipelines.cli.runner import EPHEMERAL_EVENT_SETTINGS, PERSISTENT_EVENT_SETTINGS, QUIET
from pipelines.dagster_home.home import prepare
from pipelines.dagster_home.storage import creditlens_instance
from pipelines.orchestration.runs import partition_range_tags

# name -> (instance, event settings): "ephemeral", or a fresh folder with Dagster's own SQLite
# storage ("stock") or the CLI's ("batching").
MODES: dict[str, tuple[str, dict[str, str]]] = {
    "Dagster's defaults": ("ephemeral", {}),
    "the CLI's ephemeral settings": ("ephemeral", EPHEMERAL_EVENT_SETTINGS),
    "persistent, Dagster's SQLite storage": ("stock", PERSISTENT_EVENT_SETTINGS),
    "persistent, the CLI's batching storage": ("batching", PERSISTENT_EVENT_SETTINGS),
}

START = date(2024, 7, 1)


warnings.filterwarnings("ignore", category=BetaWarning)


@asset(
    partitions_def=DailyPartitionsDefinition(start_date=START.isoformat()),
    backfill_policy=BackfillPolicy.single_run(),
)
def empty() -> MaterializeResult:
    return MaterializeResult(metadata={"entries": 0})


def open_instance(kind: str) -> DagsterInstance:
    if kind == "ephemeral":
        return DagsterInstance.ephemeral()
    home = prepare(Path(tempfile.mkdtemp(prefix="creditlens-bench-dagster-")))
    if kind == "stock":
        return DagsterInstance.from_config(str(home))
    return creditlens_instance(home)


def run_once(days: int, kind: str) -> float:
    """One run over ``days`` daily partitions of the empty asset; its wall time (the instance's
    creation excluded: `benchmarks.dagster_instance` measures whole syncs)."""
    job = Definitions(assets=[empty], jobs=[define_asset_job("j", [empty])]).resolve_job_def("j")
    last = START + timedelta(days=days - 1)
    tags = partition_range_tags(START, last)
    instance = open_instance(kind)
    began = time.perf_counter()
    result = job.execute_in_process(run_config=QUIET, instance=instance, tags=tags)
    seconds = time.perf_counter() - began
    if not result.success:
        raise RuntimeError("the empty backfill run failed")
    return seconds


def run_every_setting(days: int, repeats: int) -> dict[str, list[float]]:
    """In one child (``--one-child``): each setting's runs in turn, its variables set for them as
    ``measure`` sets them for a child of its own (Dagster reads them during a run)."""
    times: dict[str, list[float]] = {}
    for name, (kind, settings) in MODES.items():
        for variable in EPHEMERAL_EVENT_SETTINGS:
            os.environ.pop(variable, None)
        os.environ.update(settings)
        times[name] = [run_once(days, kind) for _ in range(repeats)]
    return times


def _child(days: int, *args: str, env: dict[str, str]) -> Any:
    """A ``--child`` run's figures: the JSON of its last line."""
    command = [sys.executable, "-m", "benchmarks.dagster_partition_events", "--child", str(days)]
    done = subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(days: int, kind: str, settings: dict[str, str]) -> float:
    env = {k: v for k, v in os.environ.items() if k not in EPHEMERAL_EVENT_SETTINGS}
    env.update(settings)
    figures = _child(days, "--kind", kind, env=env)
    return float(figures["seconds"])


def measure_in_one_child(days: int, repeats: int) -> dict[str, list[float]]:
    figures = _child(days, "--every-setting", "--repeats", str(repeats), env=dict(os.environ))
    return {name: [float(t) for t in times] for name, times in figures.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=730, help="daily partitions in the run")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each setting")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--one-child",
        action="store_true",
        help="every setting in one child process, one after the other (a smoke run: its times "
        "are not figures, the later settings find Dagster imported)",
    )
    parser.add_argument("--kind", default="ephemeral", help=argparse.SUPPRESS)
    parser.add_argument("--every-setting", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    repeats = max(1, args.repeats)
    if args.child and args.every_setting:
        print(json.dumps(run_every_setting(args.child, repeats)))
        return 0
    if args.child:
        print(json.dumps({"seconds": run_once(args.child, args.kind)}))
        return 0
    if args.days < 1:
        parser.error("--days must be at least 1")
    load_start = os.getloadavg()
    best: dict[str, float] = {}
    together = measure_in_one_child(args.days, repeats) if args.one_child else {}
    for name, (kind, settings) in MODES.items():
        if args.one_child:
            times = together[name]
        else:
            times = [measure(args.days, kind, settings) for _ in range(repeats)]
        best[name] = min(times)
        rounds = " / ".join(f"{t:.2f}" for t in times)
        print(f"{args.days} daily partitions, {name}: {best[name]:.2f}s (rounds {rounds})")
    default, cli, stock, batching = best.values()
    per_day = 1000 * cli / args.days
    print(f"ratio defaults / CLI settings: {default / cli:.2f}x; per day {per_day:.1f} ms")
    print(
        f"persistent / ephemeral (CLI settings): {batching / cli:.2f}x with the CLI's storage, "
        f"{stock / cli:.2f}x with Dagster's; per day {1000 * batching / args.days:.1f} ms"
    )
    print(load_line(load_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
