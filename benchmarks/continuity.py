"""How fast, and in how much memory, the continuity check runs: polars against one DuckDB query.

One ledger of N entries (default 10,000,000) is generated directly in polars (no HTTP): a few
accounts, mostly usage debits with some top-ups and refunds, ~1 createdAt in 8 shared with the
previous entry (so tie groups, some of them mixing credits and debits that the balance-descending
sort does not chain), a handful of injected hidden movements, rows newest first as the API sends
them. It is written once to Parquet; then two child processes (each its own peak RSS) load it
into memory and run, timed after loading:

1. creditlens: `transforms.continuity.reconcile_continuity` (ordered ledger, tie search, breaks);
2. DuckDB: the same rule as one SQL window query (LAG over account, createdAt, balances), which
   orders ties by balance like our vectorized pass but has no tie search, so mixed tie groups
   show up there as false breaks.

Prints both times, peak memory and the ratio (target: creditlens within 1.5x of the SQL query).

    python -m benchmarks.continuity [--entries 10000000] [--accounts 4] [--gaps 12] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

from benchmarks.harness.machine import load_line

ROOT = Path(__file__).resolve().parent.parent
Loaded = TypeVar("Loaded")
Checked = TypeVar("Checked")
Figures = dict[str, float]

SQL = """
WITH chained AS (
    SELECT account, entry_id, created_at, balance_after,
           balance_after - amount AS balance_before,
           LAG(balance_after) OVER w AS expected_balance,
           LAG(entry_id) OVER w AS before_entry_id,
           LAG(created_at) OVER w AS break_start
    FROM ledger
    WINDOW w AS (PARTITION BY account
                 ORDER BY created_at, balance_after - amount DESC, balance_after DESC, entry_id)
)
SELECT account, 'continuity' AS kind, break_start, created_at AS break_end, expected_balance,
       balance_before AS observed_balance, balance_before - expected_balance AS gap,
       before_entry_id, entry_id AS after_entry_id
FROM chained
WHERE balance_before <> expected_balance
"""


def generate(entries: int, accounts: int, gaps: int, seed: int = 7) -> tuple[pl.DataFrame, int]:
    """A ledger in the landed `ledger_entries` shape and how many hidden movements it has."""
    from transforms.micros import from_micros

    per_account = -(-entries // accounts)
    index = pl.int_range(entries, dtype=pl.Int64)
    noise = [index.hash(seed + k) for k in range(4)]
    kind = (noise[1] % 1000).cast(pl.Int64)
    amount = (
        pl.when(kind < 5)  # top-up: 10,000 to 110,000 credits
        .then(10_000_000_000 + (noise[2] % 100_000_000_000).cast(pl.Int64))
        .when(kind < 30)  # refund of a conversation: up to 5 credits
        .then(1 + (noise[2] % 5_000_000).cast(pl.Int64))
        .otherwise(-(1 + (noise[2] % 5_000_000).cast(pl.Int64)))  # usage
    )
    entry_type = (
        pl.when(kind < 5).then(pl.lit("TopUp")).when(kind < 30).then(pl.lit("Refund"))
    ).otherwise(pl.lit("Usage"))
    # Evenly spread injected gaps, alternating sign; none at an account's first entry.
    spacing = max(entries // max(gaps, 1), 1)
    is_gap = (index % spacing == spacing // 2) & (index % per_account != 0) & (index > 0)
    gap = pl.when(is_gap).then(pl.when(index % 2 == 0).then(12_345_678).otherwise(-7_654_321))
    step_ms = pl.when(noise[0] % 8 == 0).then(0).otherwise(1 + (noise[0] // 8) % 20_000)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    frame = pl.select(
        account=pl.concat_str(pl.lit("acct-"), (index // per_account).cast(pl.Utf8)),
        entry_id=pl.concat_str(pl.lit("e"), index.cast(pl.Utf8)),
        __step=step_ms.cast(pl.Int64),
        entry_type=entry_type,
        __amount=amount,
        __gap=gap.fill_null(0).cast(pl.Int64),
        channel=pl.when(kind >= 5).then(pl.lit("Phone")),
        agent_id=pl.when(kind >= 5).then(
            pl.concat_str(pl.lit("agt_"), (noise[3] % 40).cast(pl.Utf8))
        ),
        campaign_id=pl.when(kind >= 5).then(
            pl.concat_str(pl.lit("cmp_"), (noise[3] % 7).cast(pl.Utf8))
        ),
    ).with_columns(
        __injected=(pl.col("__gap") != 0).sum(),
        created_at=pl.lit(start).dt.cast_time_unit("us")
        + pl.duration(milliseconds=pl.col("__step").cum_sum().over("account")),
        __after=500_000_000_000 + (pl.col("__amount") + pl.col("__gap")).cum_sum().over("account"),
    )
    injected = int(frame["__injected"][0]) if frame.height else 0
    frame = frame.select(
        "account",
        "entry_id",
        "created_at",
        "entry_type",
        amount=from_micros(pl.col("__amount")),
        description=pl.lit(None, dtype=pl.Utf8),
        has_description=pl.lit(False),
        channel="channel",
        agent_id="agent_id",
        campaign_id="campaign_id",
        balance_after=from_micros(pl.col("__after")),
    )
    return frame.reverse(), injected  # newest first, as the API sends it


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _timed(
    load: Callable[[], Loaded], check: Callable[[Loaded], Checked]
) -> tuple[Checked, Figures]:
    """Loading is timed apart from the check, and the memory after loading noted, so what each
    engine's check costs is not blurred by how it reads Parquet."""
    began = time.perf_counter()
    data = load()
    loaded = time.perf_counter()
    rss_loaded = _rss_mb()
    result = check(data)
    done = time.perf_counter()
    figures: Figures = {
        "load_s": loaded - began,
        "check_s": done - loaded,
        "rss_after_load_mb": rss_loaded,
        "peak_rss_mb": _peak_rss_mb(),
    }
    return result, figures


def child_polars(parquet: Path) -> dict[str, Any]:
    from transforms.continuity import reconcile_continuity

    result, figures = _timed(lambda: pl.read_parquet(parquet), reconcile_continuity)
    return {
        **figures,
        "breaks": result.breaks.height,
        "searched_groups": result.searched_groups,
        "ambiguous_groups": result.ambiguous_groups,
    }


def child_duckdb(parquet: Path) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect()
    breaks, figures = _timed(
        lambda: con.execute(f"CREATE TABLE ledger AS SELECT * FROM read_parquet('{parquet}')"),
        lambda _: con.execute(SQL).fetchall(),
    )
    return {**figures, "breaks": len(breaks)}


def _run_child(engine: str, parquet: Path) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.continuity", "--child", engine, str(parquet)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=10_000_000)
    parser.add_argument("--accounts", type=int, default=4)
    parser.add_argument("--gaps", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=1, help="runs per engine (best is kept)")
    parser.add_argument("--keep", action="store_true", help="keep the Parquet file")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "PARQUET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        engine, parquet = args.child
        run = child_polars if engine == "polars" else child_duckdb
        print(json.dumps(run(Path(parquet))))
        return

    load_start = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="continuity-", dir=ROOT / "benchmarks"))
    parquet = workdir / "ledger.parquet"
    began = time.perf_counter()
    ledger, injected = generate(args.entries, args.accounts, args.gaps)
    ledger.write_parquet(parquet)
    size_mb = parquet.stat().st_size / 2**20
    print(
        f"generated {ledger.height:,} entries, {args.accounts} accounts, {injected} gaps "
        f"in {time.perf_counter() - began:.1f}s ({size_mb:.0f} MB Parquet); "
        f"{os.cpu_count()} CPUs, polars {pl.__version__}"
    )
    del ledger
    # Engines alternate, best run kept: the machine is shared, so noise hits both alike.
    runs: dict[str, list[dict[str, Any]]] = {"duckdb": [], "polars": []}
    for _ in range(args.repeat):
        for engine, engine_runs in runs.items():
            engine_runs.append(_run_child(engine, parquet))
    results = {engine: min(r, key=lambda run: run["check_s"]) for engine, r in runs.items()}
    header = ("engine", "load s", "check s", "RSS loaded MB", "peak MB", "breaks")
    print(
        f"{header[0]:<12}{header[1]:>9}{header[2]:>9}{header[3]:>15}{header[4]:>10}{header[5]:>8}"
    )
    for engine, r in results.items():
        print(
            f"{engine:<12}{r['load_s']:>9.2f}{r['check_s']:>9.2f}{r['rss_after_load_mb']:>15.0f}"
            f"{r['peak_rss_mb']:>10.0f}{r['breaks']:>8}"
        )
    polars_run, duck_run = results["polars"], results["duckdb"]
    print(
        f"ratio polars/duckdb check time: {polars_run['check_s'] / duck_run['check_s']:.2f}x "
        f"(target <= 1.5x); peak memory ratio "
        f"{polars_run['peak_rss_mb'] / duck_run['peak_rss_mb']:.2f}x"
    )
    print(
        f"polars searched {polars_run['searched_groups']} tie groups, "
        f"{polars_run['ambiguous_groups']} ambiguous; injected gaps: {injected}, "
        f"found by polars: {polars_run['breaks']}, by the SQL rule: {duck_run['breaks']}"
    )
    print(load_line(load_start))
    if args.keep:
        print(f"kept {parquet}")
    else:
        parquet.unlink()
        workdir.rmdir()


if __name__ == "__main__":
    main()
