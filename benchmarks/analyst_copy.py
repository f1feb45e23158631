"""What publishing the analyst copy costs, against what changed since the last publish.

    python -m benchmarks.analyst_copy [--accounts 20] [--entries 20000] [--repeats 3] [--keep]

Syncs ``--accounts`` simulated companies of about ``--entries`` ledger entries each, then times,
side by side on the same warehouse: a publish with nothing changed, one with one account's day
changed, one with a day changed in every account (what a daily sync does), and the whole-file copy
every publish was before (copy beside under the shared lock, flush, rename). Prints each time's
median, the ratios to the whole-file copy, and the sizes on disk. Issue 29: a cost that follows
what changed, not the warehouse's size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from benchmarks.harness.machine import announce, finish, scratch_directory
from benchmarks.peers.creditlens_sync import accounts_environment
from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from pipelines.warehouse.lock import file_lock
from pipelines.warehouse.publish import Published, analyst_parquet_dir, publish_now
from pipelines.warehouse.writer import Warehouse
from simulator import Scenario, Simulator, serve
from simulator.scenario import CompanySpec

HISTORY_DAYS = 365


def scenario(accounts: int, entries: int, history_days: int = HISTORY_DAYS) -> Scenario:
    return Scenario(
        name="analyst-copy-benchmark",
        companies=[
            CompanySpec(
                name=f"co{n:03d}", history_days=history_days, entries_per_day=entries / history_days
            )
            for n in range(accounts)
        ],
    )


def whole_file_copy(warehouse: Warehouse, target: Path) -> None:
    """The publish before issue 29: the whole file copied beside, flushed, then renamed."""
    partial = target.with_name(f".{target.name}.bench.partial")
    with file_lock(warehouse.path, exclusive=False, timeout_s=warehouse.lock_timeout_s):
        shutil.copyfile(warehouse.path, partial)
    with open(partial, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(partial, target)


def change_latest_day(warehouse: Warehouse, accounts: list[str], mark: int) -> None:
    """One entry of each account's latest day gets another description, as a re-landed day
    would: that account's current month changes, nothing else."""
    with warehouse.write() as con:
        for account in accounts:
            con.execute(
                "UPDATE ledger_entries SET description = ? WHERE entry_id = (SELECT "
                "max(entry_id) FROM ledger_entries WHERE account = ? AND entry_day = "
                "(SELECT max(entry_day) FROM ledger_entries WHERE account = ?))",
                [f"benchmark change {mark}", account, account],
            )


def timed(repeats: int, before: Callable[[int], None], run: Callable[[], object]) -> float:
    """The median of ``repeats`` runs, each after ``before`` (untimed)."""
    times = []
    for n in range(repeats):
        before(n)
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=20)
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--history-days",
        type=int,
        default=HISTORY_DAYS,
        help="Days the entries spread over (a smoke run: fewer daily partitions to sync).",
    )
    parser.add_argument("--keep", action="store_true", help="Keep the scratch directory.")
    args = parser.parse_args(argv)
    info = announce()
    sim = Simulator(scenario(args.accounts, args.entries, args.history_days))
    keys = [(c.name, next(k.secret for k in c.keys if k.scope == "full")) for c in sim.companies]
    first = (sim.clock.now - timedelta(days=args.history_days - 1)).date()
    with scratch_directory("creditlens-analyst-", args.keep) as scratch:
        with serve(sim) as server:
            env = accounts_environment(server.url, keys, scratch, first, concurrency=8)
            env["CREDITLENS_DAGSTER_INSTANCE"] = "ephemeral"
            os.environ.update(env)
            settings = Settings.from_env(env)
            report = run_sync(settings, None, None)  # publishes the first copy
            if report.failures():
                raise SystemExit(f"the sync failed: {report.failures()}")
        warehouse = settings.open_warehouse()
        names = [a.name for a in settings.accounts]
        target = warehouse.analyst_copy
        results: list[Published] = []

        def publish() -> None:
            results.append(publish_now(warehouse.path, target, warehouse.lock_timeout_s))

        def nothing(_: int) -> None:
            return None

        old = scratch / "whole-file-copy.duckdb"
        copy_s = timed(args.repeats, nothing, lambda: whole_file_copy(warehouse, old))
        unchanged_s = timed(args.repeats, nothing, publish)
        one_s = timed(args.repeats, lambda n: change_latest_day(warehouse, names[:1], n), publish)
        rewritten_one = results[-1].rewritten
        every_s = timed(
            args.repeats, lambda n: change_latest_day(warehouse, names, args.repeats + n), publish
        )
        rewritten_every = results[-1].rewritten
        parts = results[-1].rewritten + results[-1].unchanged
        sizes = (size(warehouse.path), size(target), size(analyst_parquet_dir(target)))
    print(
        f"warehouse: {args.accounts} accounts x ~{args.entries:,} entries, "
        f"{sizes[0] / 1e6:.1f} MB; "
        f"analyst copy: views file {sizes[1] / 1e3:.0f} KB + Parquet {sizes[2] / 1e6:.1f} MB "
        f"({parts} parts)"
    )
    print(f"whole-file copy (before): {copy_s:.3f}s")
    print(f"publish, nothing changed: {unchanged_s:.3f}s ({unchanged_s / copy_s:.2f}x the copy)")
    print(
        f"publish, one account's day changed: {one_s:.3f}s ({one_s / copy_s:.2f}x the copy, "
        f"{rewritten_one} parts rewritten)"
    )
    print(
        f"publish, a day changed in every account: {every_s:.3f}s ({every_s / copy_s:.2f}x the "
        f"copy, {rewritten_every} parts rewritten)"
    )
    print(finish(info))


if __name__ == "__main__":
    main()
