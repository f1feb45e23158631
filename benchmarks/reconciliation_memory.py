"""Reconciliation's peak memory and time: the whole ledger at once against slices of whole days.

Reconciliation used to be the memory peak of a sync (the whole ledger in polars, ~1.3 GB at 1M
entries). This runs `reconcile_account` on copies of an existing warehouse (never the original)
in child processes, one per mode, and prints their wall time and peak RSS side by side:

1. whole: one slice, the whole ledger at once (slice size infinity);
2. sliced: the default slice size (or `--slice-entries`).

`--entries 200000,1000000` first truncates a copy to whole UTC days totalling about each size
(from the ledger's first day), so the figures show how the peak grows with N. Each child's peak
is `wait4`'s ru_maxrss of that child. Linux counts in it the parent's own high-water mark at the
fork, so the parent stays small: copying, truncating and digesting run in helper children too.
Both modes must write the same rows: the command compares a digest of the derived tables of the
two copies and fails when they differ.

    python -m benchmarks.reconciliation_memory --warehouse PATH [--account acme]
        [--entries 200000,1000000] [--slice-entries 100000] [--out FILE] [--keep]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.harness.machine import load_line
from benchmarks.harness.warehouse_copy import truncated_copy
from benchmarks.peers.measured import run_child

ROOT = Path(__file__).resolve().parent.parent
CHILD_TIMEOUT_S = 3600
RSS_LIMIT_MB = 500.0  # the target at 1M entries
DIGESTS = {
    "balance_breaks": "SELECT * EXCLUDE (run_id, checked_at) FROM balance_breaks "
    "WHERE account = ? ORDER BY ALL",
    "daily_balance": "SELECT * EXCLUDE (run_id) FROM daily_balance WHERE account = ? ORDER BY ALL",
    "ledger_enriched": "SELECT * FROM ledger_enriched WHERE account = ? ORDER BY chain_position",
    "reconciliation_runs": "SELECT * EXCLUDE (run_id, checked_at) FROM reconciliation_runs "
    "WHERE account = ? AND run_id = 'benchmark'",
}


@dataclass
class ModeRun:
    size: int  # entries in the copy
    mode: str  # whole | sliced
    slice_entries: int | None
    slices: int
    wall_s: float  # the child process, start-up included
    reconcile_s: float  # reconcile_account alone
    peak_rss_mb: float  # wait4's ru_maxrss of the child
    rss_before_mb: float  # the child's RSS after imports, before reconciling
    continuity_breaks: int
    digest: str


def _connect(path: Path, read_only: bool) -> Any:
    import duckdb

    con = duckdb.connect(str(path), read_only=read_only)
    con.execute("SET TimeZone = 'UTC'")
    return con


def digest(path: Path, account: str) -> str:
    """One hash of every derived row, so two runs compare without holding their rows."""
    con = _connect(path, read_only=True)
    whole = hashlib.sha256()
    try:
        for table, sql in DIGESTS.items():
            whole.update(table.encode())
            cursor = con.execute(sql, [account])
            while rows := cursor.fetchmany(50_000):
                for row in rows:
                    whole.update(repr(row).encode())
    finally:
        con.close()
    return whole.hexdigest()[:16]


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(path: Path, account: str, slice_entries: int | None) -> dict[str, Any]:
    """Runs in the child: one reconciliation, as the sync's asset runs it."""
    from pipelines.reconciliation.run import ReconcileOptions, reconcile_account
    from pipelines.reconciliation.slices import ledger_days, plan_slices
    from pipelines.warehouse.read import frame, open_read_only
    from pipelines.warehouse.writer import Warehouse

    warehouse = Warehouse(path, lock_timeout_s=60)
    rss_before = _rss_mb()
    began = time.perf_counter()
    # A full pass: what this measures is the whole ledger at once against slices of it; the
    # daily, incremental pass is benchmarks/reconciliation_daily.py's.
    result = reconcile_account(
        warehouse, account, ReconcileOptions(slice_entries=slice_entries), "benchmark", full=True
    )
    reconcile_s = time.perf_counter() - began
    with open_read_only(warehouse.path, lock_timeout_s=60) as con:

        class Reader:
            def read(self, sql: str, params: list[Any] | None = None) -> Any:
                return frame(con, sql, params)

        slices = len(plan_slices(ledger_days(Reader(), account), slice_entries))
    return {
        "reconcile_s": reconcile_s,
        "rss_before_mb": rss_before,
        "slices": slices,
        "entries": result.entries,
        "continuity_breaks": result.continuity_breaks.height,
    }


def _helper(*args: str) -> str:
    """Runs one of the unmeasured steps in a child; returns its last line of output."""
    command = [sys.executable, "-m", "benchmarks.reconciliation_memory", *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:1])} failed:\n{done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


def run_mode(
    copy: Path, account: str, size: int, mode: str, slice_entries: int | None, logs: Path
) -> ModeRun:
    command = [sys.executable, "-m", "benchmarks.reconciliation_memory", "--child"]
    command += ["--warehouse", str(copy), "--account", account]
    command += ["--slice-entries", str(slice_entries) if slice_entries else "whole"]
    run = run_child(
        command,
        env=os.environ,
        cwd=ROOT,
        timeout_s=CHILD_TIMEOUT_S,
        log_dir=logs,
        name=f"{size}-{mode}",
    ).check(f"reconciliation ({mode}, {size:,} entries)")
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    if figures["entries"] != size:
        raise RuntimeError(f"{mode} reconciled {figures['entries']} entries, not {size}")
    return ModeRun(
        size=size,
        mode=mode,
        slice_entries=slice_entries,
        slices=figures["slices"],
        wall_s=run.wall_s,
        reconcile_s=figures["reconcile_s"],
        peak_rss_mb=run.kernel_peak_rss_mb,
        rss_before_mb=figures["rss_before_mb"],
        continuity_breaks=figures["continuity_breaks"],
        digest=_helper("--digest", "--warehouse", str(copy), "--account", account),
    )


def growth_exponent(runs: list[ModeRun], mode: str) -> float | None:
    """b in peak ~ N^b between the smallest and the largest size (1 = linear)."""
    mine = sorted((r for r in runs if r.mode == mode), key=lambda r: r.size)
    if len(mine) < 2 or mine[0].size == mine[-1].size:
        return None
    first, last = mine[0], mine[-1]
    return math.log(last.peak_rss_mb / first.peak_rss_mb) / math.log(last.size / first.size)


def print_table(runs: list[ModeRun]) -> None:
    header = f"{'entries':>10} {'mode':<7}{'slice':>9}{'slices':>7}{'wall s':>8}"
    header += f"{'reconcile s':>12}{'RSS before MB':>15}{'peak RSS MB':>13}{'breaks':>8}"
    print(header)
    for r in runs:
        slice_text = f"{r.slice_entries:,}" if r.slice_entries else "all"
        print(
            f"{r.size:>10,} {r.mode:<7}{slice_text:>9}{r.slices:>7}{r.wall_s:>8.2f}"
            f"{r.reconcile_s:>12.2f}{r.rss_before_mb:>15.0f}{r.peak_rss_mb:>13.0f}"
            f"{r.continuity_breaks:>8}"
        )


def main(argv: list[str] | None = None) -> None:
    from pipelines.reconciliation.slices import SLICE_ENTRIES

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warehouse", type=Path, required=True, help="read only: it is copied")
    parser.add_argument("--account", default="acme")
    parser.add_argument("--entries", default="", help="sizes, e.g. 200000,1000000 (default: all)")
    parser.add_argument("--slice-entries", default=str(SLICE_ENTRIES))
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--digest", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--copy-to", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    slice_entries = None if args.slice_entries == "whole" else int(args.slice_entries)
    if args.child:
        print(json.dumps(child(args.warehouse, args.account, slice_entries)))
        return
    if args.digest:
        print(digest(args.warehouse, args.account))
        return
    if args.copy_to:
        wanted = int(args.entries) if args.entries else None
        print(truncated_copy(args.warehouse, args.copy_to, args.account, wanted))
        return
    if slice_entries is None:
        parser.error("--slice-entries must be a number for the sliced mode")
    sizes: list[int | None] = [int(n) for n in args.entries.split(",") if n] or [None]
    load_start = os.getloadavg()
    scratch = Path(tempfile.mkdtemp(prefix="reconciliation-memory-"))
    runs: list[ModeRun] = []
    problems: list[str] = []
    try:
        for wanted in sizes:
            base = scratch / f"{wanted or 'all'}.duckdb"
            copy_args = ["--warehouse", str(args.warehouse), "--account", args.account]
            copy_args += ["--copy-to", str(base), "--entries", str(wanted or "")]
            size = int(_helper(*copy_args))
            pair = []
            for mode, limit in (("whole", None), ("sliced", slice_entries)):
                copy = scratch / f"{wanted or 'all'}-{mode}.duckdb"
                shutil.copyfile(base, copy)
                pair.append(run_mode(copy, args.account, size, mode, limit, scratch / "logs"))
                copy.unlink()
            base.unlink()
            runs.extend(pair)
            if pair[0].digest != pair[1].digest:
                problems.append(f"{size:,} entries: the derived tables differ between the modes")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"reconcile_account on copies of {args.warehouse} (account {args.account}); "
        f"{os.cpu_count()} CPUs; peak RSS = wait4 ru_maxrss of each child"
    )
    print_table(runs)
    for mode in ("whole", "sliced"):
        exponent = growth_exponent(runs, mode)
        if exponent is not None:
            print(f"{mode}: peak RSS grows as N^{exponent:.2f} (1.00 = linear)")
    largest = max(runs, key=lambda r: (r.size, r.mode == "sliced"))
    print(
        f"sliced at {largest.size:,} entries: {largest.peak_rss_mb:.0f} MB peak "
        f"(target < {RSS_LIMIT_MB:.0f} MB at 1,000,000); derived tables identical in both modes: "
        f"{'yes' if not problems else 'NO'}"
    )
    load_end = os.getloadavg()
    print(load_line(load_start, load_end))
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "date": datetime.now(UTC).isoformat(),
                    "cores": os.cpu_count(),
                    "loadavg_start": list(load_start),
                    "loadavg_end": list(load_end),
                    "warehouse": str(args.warehouse),
                    "runs": [asdict(r) for r in runs],
                    "growth_exponent": {m: growth_exponent(runs, m) for m in ("whole", "sliced")},
                    "problems": problems,
                },
                indent=2,
            )
        )
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
