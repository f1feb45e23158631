"""``python -m benchmarks.lake``: the warehouse as a DuckLake against the file, side by side.

One agency (``--accounts`` companies of ``--entries`` entries, at loopback: the API is not what
is measured), a throwaway PostgreSQL (benchmarks/harness/postgres.py) for the lake's catalog and
a folder for its data. Each round, in turn:

1. the first sync of every company into a new file and into a new lake (their order alternates
   by round), then a day later the daily sync of each;
2. the same first sync into a new lake from one process, and from two processes at once, each
   syncing half the companies with a folder of its own, as two hosts would.

Every sync is a whole `creditlens sync` process; its wall time and peak RSS are printed, with the
ratios lake/file and two/one pair by pair, and the load average at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.harness.contenders import sync_env, whole_range
from benchmarks.harness.machine import announce, finish
from benchmarks.harness.postgres import Postgres, running_postgres
from benchmarks.peers.creditlens_sync import run_sync
from benchmarks.peers.measured import ChildRun
from benchmarks.peers.simulated_company import SimulatedPlatform, simulated_platform

NOW = "2026-06-30T23:59:59+00:00"


def _env(base: dict[str, str], workdir: Path, location: str | None) -> dict[str, str]:
    if location is None:
        return base
    return base | {"CREDITLENS_WAREHOUSE": location, "CREDITLENS_LAKE_DIR": str(workdir / "lake")}


def _sync(env: dict[str, str], workdir: Path, args: list[str], name: str) -> ChildRun:
    return run_sync(env, workdir, args, timeout_s=900, name=name).check(name)


def _host(platform: SimulatedPlatform, folder: Path, half: list[str], location: str) -> ChildRun:
    """One host's first sync of its half of the companies, from a folder of its own."""
    env = _env(sync_env(platform, folder, None, "ephemeral"), folder, location)
    picked = [arg for name in half for arg in ("--account", name)]
    return _sync(env, folder, [*whole_range(platform), *picked], folder.name)


def _lake(postgres: Postgres, name: str) -> str:
    return f"ducklake:postgres:{postgres.dsn(postgres.create_database(name))}"


def _round(
    platform: SimulatedPlatform, postgres: Postgres, scratch: Path, names: list[str], n: int
) -> dict[str, ChildRun]:
    """One round: the first and daily syncs into a file and a lake, then one process against
    two into a new lake; each figure's whole process."""
    found: dict[str, ChildRun] = {}
    backends = [("file", None), ("lake", _lake(postgres, f"bench_{n}"))]
    if n % 2:
        backends.reverse()
    envs = {}
    for backend, location in backends:
        workdir = scratch / f"{backend}-{n}"
        env = _env(sync_env(platform, workdir, None, "ephemeral"), workdir, location)
        envs[backend] = (env, workdir)
        found[f"first sync, {backend}"] = _sync(
            env, workdir, whole_range(platform), f"first-{backend}"
        )
    platform.advance_days(1)
    for backend, _ in backends:
        env, workdir = envs[backend]
        found[f"daily sync, {backend}"] = _sync(env, workdir, [], f"daily-{backend}")
    one, two = _lake(postgres, f"one_{n}"), _lake(postgres, f"two_{n}")
    workdir = scratch / f"one-{n}"
    env = _env(sync_env(platform, workdir, None, "ephemeral"), workdir, one)
    found["first sync into a lake, one process"] = _sync(
        env, workdir, whole_range(platform), "one-process"
    )
    halves = [names[: len(names) // 2], names[len(names) // 2 :]]
    folders = [scratch / f"host-{h}-{n}" for h in (1, 2)]
    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:  # each thread only waits on its child process
        hosts = list(pool.map(_host, [platform] * 2, folders, halves, [two] * 2))
    wall = time.monotonic() - started
    peak = max(h.peak_rss_mb for h in hosts)
    found["first sync into a lake, two processes at once"] = ChildRun(
        (), 0, wall, peak, peak, peak, "", ""
    )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lake", description=__doc__)
    parser.add_argument("--accounts", type=int, default=50)
    parser.add_argument("--entries", type=int, default=2000, help="entries per company")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--history-days", type=int, default=730)
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    info = announce()
    scratch = Path(tempfile.mkdtemp(prefix="creditlens-lake-bench-"))
    names = [f"company-{n:02d}" for n in range(1, args.accounts + 1)]
    figures: list[dict[str, Any]] = []
    try:
        with (
            running_postgres() as postgres,
            simulated_platform(
                names, args.entries, datetime.fromisoformat(NOW), scratch / "simulator",
                labels=("creditlens",), history_days=args.history_days,
            ) as platform,
        ):  # fmt: skip
            for n in range(args.rounds):
                found = _round(platform, postgres, scratch, names, n)
                print(f"\nround {n + 1}: {args.accounts} companies x {args.entries} entries")
                print("| sync | wall s | peak RSS MB |\n|---|---:|---:|")
                for what, run in found.items():
                    print(f"| {what} | {run.wall_s:.2f} | {run.peak_rss_mb:.0f} |")
                ratios = {
                    "first sync lake/file": found["first sync, lake"].wall_s
                    / found["first sync, file"].wall_s,
                    "daily sync lake/file": found["daily sync, lake"].wall_s
                    / found["daily sync, file"].wall_s,
                    "first sync into a lake two/one": found[
                        "first sync into a lake, two processes at once"
                    ].wall_s
                    / found["first sync into a lake, one process"].wall_s,
                }
                for what, ratio in ratios.items():
                    print(f"{what}: {ratio:.2f}")
                figures.append(
                    {"round": n + 1, "ratios": ratios}
                    | {what: [run.wall_s, run.peak_rss_mb] for what, run in found.items()}
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("\n" + finish(info))
    if args.out:
        args.out.write_text(json.dumps({"machine": info, "rounds": figures}, indent=1))


if __name__ == "__main__":
    main()
