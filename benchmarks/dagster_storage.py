"""A daily sync recorded with the CLI's one-connection storage, and with Dagster's own.

    python -m benchmarks.dagster_storage [--accounts 1] [--entries 50000] [--repeats 7]
        [--history-days 730] [--account-concurrency N] [--keep] [--skip-warm-up]

A persistent instance's folder records a CLI run with the CLI's storage
(pipelines/dagster_home/storage.py: a run's batch of asset events in one transaction per
database, one SQLite connection per database for the process) where its dagster.yaml names no
storage, and with Dagster's own where it names ``storage: {sqlite: {base_dir: FOLDER}}``
(docs/operating.md). Issue 45 keeps the CLI's only where it saves at least 5% of a daily sync.

One steered simulator serves ``--accounts`` companies of ``--entries`` entries each over
``--history-days``. Each storage gets a warehouse and an instance folder of its own, and a first
sync of the whole history into them (timed once, for the record). Then ``--repeats`` rounds: the
simulator's clock moves a day (a new day of entries appears) and `creditlens sync --until DAY`,
the daily sync (the product's lookback), runs into each, the two storages alternating which goes
first. Whole processes are timed, start-up included, as a user waits for them. Printed: each
storage's median and rounds, the ratio of each round's pair (CLI's / Dagster's), their median,
the saving it means, and the load average at the start and the end.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import yaml

from benchmarks.harness.contenders import sync_env, whole_range
from benchmarks.harness.machine import (
    DEFAULT_NOW,
    SKIP_WARM_UP_HELP,
    announce,
    finish,
    parse_now,
    scratch_directory,
    use_bytecode_cache,
)
from benchmarks.peers.creditlens_sync import run_sync
from benchmarks.peers.simulated_company import COMPANY, SimulatedPlatform, simulated_platform
from pipelines.dagster_home.home import HOME_NAME, prepare
from pipelines.dagster_home.storage import creditlens_instance

# The CLI's storage first: the ratios are the CLI's over Dagster's.
STORAGES = {
    "ours": "the CLI's one-connection storage",
    "dagster": "Dagster's own SQLite storage",
}
# The event log each storage records with, checked in each folder before the rounds: a folder
# that silently fell back to the other storage would measure nothing.
EVENT_LOGS = {"ours": "BatchingSqliteEventLogStorage", "dagster": "SqliteEventLogStorage"}
KEEP_AT = 0.05  # the saving of a daily sync below which Dagster's own storage is to be used
HOME_ENV = "CREDITLENS_DAGSTER_HOME"


@dataclass(frozen=True)
class Side:
    """One storage's warehouse and instance folder, and the shell its syncs run in."""

    storage: str
    workdir: Path
    home: Path
    env: dict[str, str]


def company_names(count: int) -> list[str]:
    if count == 1:
        return [COMPANY]
    width = max(2, len(str(count)))
    return [f"company-{n:0{width}d}" for n in range(1, count + 1)]


def side(platform: SimulatedPlatform, storage: str, workdir: Path, concurrency: int | None) -> Side:
    """The folder prepared as the CLI prepares it; for Dagster's storage, its dagster.yaml then
    names Dagster's SQLite storage over the same folder, as an operator would write it."""
    home = prepare(workdir / HOME_NAME)
    if storage == "dagster":
        section = {"storage": {"sqlite": {"base_dir": str(home)}}}
        with (home / "dagster.yaml").open("a", encoding="utf-8") as config:
            config.write("\n" + yaml.safe_dump(section))
    env = sync_env(platform, workdir, concurrency) | {HOME_ENV: str(home)}
    return Side(storage, workdir, home, env)


def recorded_with(home: Path) -> str:
    """The class of the event log a CLI process opens the folder with."""
    with creditlens_instance(home) as instance:
        return type(instance.event_log_storage).__name__


def sync(one: Side, args: Sequence[str], name: str, timeout_s: float) -> float:
    """One `creditlens sync ARGS` into the side's warehouse; its wall time."""
    run = run_sync(one.env, one.workdir, args, timeout_s=timeout_s, name=name)
    return run.check(f"{name} ({STORAGES[one.storage]})").wall_s


def report(
    daily: Mapping[str, Sequence[float]], backfill: Mapping[str, float], what: str
) -> list[str]:
    """The lines printed: ``daily[storage]`` in round order, ``backfill[storage]`` once."""
    lines = []
    for storage, label in STORAGES.items():
        rounds = " / ".join(f"{t:.2f}" for t in daily[storage])
        lines.append(
            f"{label}, daily sync of {what}: median {statistics.median(daily[storage]):.2f}s "
            f"(rounds {rounds}; first sync {backfill[storage]:.2f}s)"
        )
    pairs = [o / d for o, d in zip(daily["ours"], daily["dagster"], strict=True)]
    ratio = statistics.median(pairs)
    saving = 1 - ratio
    verdict = "keep the CLI's storage" if saving >= KEEP_AT else "use Dagster's own storage"
    lines.append(
        "the CLI's / Dagster's, pair by pair: "
        + " ".join(f"{p:.3f}" for p in pairs)
        + f"; median {ratio:.3f}"
    )
    lines.append(
        f"the CLI's storage saves {saving:.1%} of a daily sync (median of the pairs; "
        f"{KEEP_AT:.0%} or more keeps it): {verdict}"
    )
    return lines


def measure(
    args: argparse.Namespace, scratch: Path, names: list[str], what: str
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """The first syncs, then the rounds of daily syncs: each storage's daily times in round
    order, and its first sync's."""
    daily: dict[str, list[float]] = {storage: [] for storage in STORAGES}
    backfill: dict[str, float] = {}
    now = parse_now(args.now) - timedelta(days=args.repeats)  # each round adds a day
    with simulated_platform(
        names,
        args.entries,
        now,
        scratch / "simulator",
        labels=("creditlens",),
        history_days=args.history_days,
    ) as platform:
        concurrency = args.account_concurrency
        sides = [side(platform, storage, scratch / storage, concurrency) for storage in STORAGES]
        for s in sides:
            backfill[s.storage] = sync(s, whole_range(platform), f"first-{s.storage}", args.timeout)
            found = recorded_with(s.home)
            if found != EVENT_LOGS[s.storage]:
                raise RuntimeError(f"{s.home} records with {found}, not {STORAGES[s.storage]}")
        print(f"first syncs of {platform.first}..{platform.last} done; {what}")
        for n in range(args.repeats):
            platform.advance_days(1)
            until = ["--until", platform.last.isoformat()]
            for s in sides if n % 2 == 0 else sides[::-1]:
                daily[s.storage].append(sync(s, until, f"daily-{n + 1}-{s.storage}", args.timeout))
            print(
                f"round {n + 1} ({platform.last}): "
                + ", ".join(f"{s.storage} {daily[s.storage][-1]:.2f}s" for s in sides),
                flush=True,
            )
    return daily, backfill


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=1, help="companies in one sync")
    parser.add_argument(
        "--account-concurrency", type=int, help="accounts synced at once (default: all)"
    )
    parser.add_argument("--entries", type=int, default=50_000, help="ledger entries a company")
    parser.add_argument("--history-days", type=int, default=730, help="days they spread over")
    parser.add_argument("--repeats", type=int, default=7, help="rounds: daily syncs of each")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per command")
    parser.add_argument("--now", default=DEFAULT_NOW, help="the simulated now after the rounds")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--skip-warm-up", action="store_true", help=SKIP_WARM_UP_HELP)
    args = parser.parse_args(argv)
    if args.accounts < 1 or args.entries < 1 or args.repeats < 1 or args.history_days < 2:
        parser.error("--accounts, --entries and --repeats must be positive, --history-days > 1")
    info = announce()
    use_bytecode_cache(warm=not args.skip_warm_up)
    names = company_names(args.accounts)
    what = f"{len(names)} account{'s' if len(names) > 1 else ''} of {args.entries:,} entries"
    with scratch_directory("creditlens-bench-storage-", args.keep) as scratch:
        daily, backfill = measure(args, scratch, names, what)
    for line in report(daily, backfill, what):
        print(line)
    print(finish(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
