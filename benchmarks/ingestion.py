"""How fast, and in how much memory, creditlens ingests a ledger: against the floor and a peer.

One run, one simulator process per size, three contenders reading the same range of it:

1. the raw floor: plain httpx fetching every page as bytes (sequential, threads, async);
2. creditlens: `creditlens sync --since FIRST --until LAST` end to end into a fresh warehouse;
3. the peer: dlt's `rest_api` source into DuckDB, from its own virtualenv.

The floor runs twice, before and after the others, so the spread shows how noisy the machine
was. Every contender is a child process (its own peak RSS); all run on loopback and are bounded
in time. Prints the machine, a table and the targets; `--out` writes the figures as JSON.

    python -m benchmarks.ingestion [--entries 200000[,1000000]] [--out FILE] [--skip-peer]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.harness.contenders import (
    INSTANCE_HELP,
    PEER_MAX_RSS_MB,
    Measured,
    best_by_level,
    dlt_problems,
    floor_levels,
    floor_problems,
    floor_round,
    measure_creditlens,
    run_dlt,
)
from benchmarks.harness.machine import (
    DEFAULT_NOW,
    SKIP_WARM_UP_HELP,
    announce,
    finish,
    parse_now,
    scratch_directory,
    use_bytecode_cache,
)
from benchmarks.harness.sync_result import check_accounts, check_rows
from benchmarks.harness.targets import print_targets, target
from benchmarks.peers.dlt_venv import ensure_dlt_python
from benchmarks.peers.simulated_company import HISTORY_DAYS, simulated_company

FLOOR_LEVELS = ("1", "2", "4", "8", "async8", "procs2")
SYNC_TIMEOUT_S = 3600
PEER_TIMEOUT_S = 5400

CREDITLENS_VS_FLOOR = 1.5  # creditlens within 1.5x of the floor's best time
DLT_VS_CREDITLENS = 20.0  # dlt at least 20x slower than creditlens
RSS_LIMIT_MB = 500.0  # creditlens under 500 MB at 1M entries
RSS_LIMIT_AT = 1_000_000
RSS_GROWTH_EXPONENT = 0.5  # peak RSS ~ N^b with b below this: not growing linearly


@dataclass
class SizeResult:
    entries_requested: int
    entries: int
    windows: list[str]
    simulator_startup_s: float
    simulator_peak_rss_mb: float
    floor: list[Measured]
    creditlens: Measured | None
    peer: Measured | None
    problems: list[str]


def measure_size(
    entries: int,
    now: datetime,
    workdir: Path,
    *,
    levels: list[str],
    repeats: int,
    dlt_python: Path | None,
    history_days: int = HISTORY_DAYS,
    peer_max_rss_mb: float | None = PEER_MAX_RSS_MB,
    instance: str | None = None,
) -> SizeResult:
    floor: list[Measured] = []
    peer: Measured | None = None
    simulator_dir = workdir / "simulator"
    prefix = f"[{entries}] "
    with simulated_company(entries, now, simulator_dir, history_days=history_days) as company:
        print(f"{prefix}simulator ready in {company.startup_s:.1f}s at {company.base_url}")
        floor += floor_round(company, levels, 1, workdir / "floor", prefix)
        creditlens, synced = measure_creditlens(
            company, workdir / "creditlens", timeout_s=SYNC_TIMEOUT_S, instance=instance
        )
        print(f"{prefix}creditlens sync: {creditlens.wall_s:.2f}s")
        if dlt_python is not None:
            peer = run_dlt(
                company,
                dlt_python,
                workdir / "dlt",
                max_s=PEER_TIMEOUT_S,
                max_rss_mb=peer_max_rss_mb,
            )
            stopped = f" ({peer.stopped})" if peer.stopped else ""
            print(f"{prefix}dlt rest_api: {peer.wall_s:.2f}s{stopped}")
        for round_ in range(2, repeats + 1):
            floor += floor_round(company, levels, round_, workdir / "floor", prefix)
    truth = floor[0].entries
    expected = {company.account: truth}
    problems = floor_problems(floor, truth)
    problems += check_accounts(synced, expected, single=True) + check_rows(synced, expected)
    problems += dlt_problems(peer, truth)
    return SizeResult(
        entries_requested=entries,
        entries=truth,
        windows=[str(w) for w in company.windows],
        simulator_startup_s=company.startup_s,
        simulator_peak_rss_mb=company.peak_rss_mb,
        floor=floor,
        creditlens=creditlens,
        peer=peer,
        problems=problems,
    )


# --- figures -------------------------------------------------------------------------------


def floor_summary(result: SizeResult) -> dict[str, Any]:
    """Per level: the best of its rounds and the spread between them (the machine's noise)."""
    levels = {}
    for name, best in best_by_level(result.floor).items():
        rounds = [m for m in result.floor if m.contender == name]
        times = [m.seconds for m in rounds]
        levels[name] = {
            "seconds": times,
            "best_s": best.seconds,
            "spread_pct": 100 * (max(times) - best.seconds) / best.seconds if best.seconds else 0.0,
            "retries": sum(m.detail["retries"] for m in rounds),
        }
    best_name = min(levels, key=lambda name: levels[name]["best_s"])
    sequential = levels.get("floor threads x1", {}).get("best_s")
    return {
        "levels": levels,
        "best": best_name,
        "best_s": levels[best_name]["best_s"],
        "sequential_s": sequential,
        "max_spread_pct": max(level["spread_pct"] for level in levels.values()),
    }


def ratios(result: SizeResult) -> dict[str, float | None]:
    floor = floor_summary(result)
    c, p = result.creditlens, result.peer
    return {
        "creditlens_over_floor": c.wall_s / floor["best_s"] if c else None,
        "creditlens_ledger_step_over_floor": (c.inner_s or 0) / floor["best_s"] if c else None,
        "dlt_over_creditlens": p.wall_s / c.wall_s if p and c and not p.failed else None,
    }


def dlt_ratio_text(result: SizeResult, ratio: float) -> str:
    """dlt/creditlens as printed: ``>=`` when dlt was stopped at its bound (a lower bound)."""
    bound = ">= " if result.peer and result.peer.stopped else ""
    return f"{bound}{ratio:.1f}x"


def targets(results: list[SizeResult]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for result in results:
        r = ratios(result)
        n = result.entries_requested
        if r["creditlens_over_floor"] is not None:
            out.append(
                target(
                    f"[{n}] creditlens within {CREDITLENS_VS_FLOOR}x of the floor's best",
                    f"{r['creditlens_over_floor']:.2f}x",
                    r["creditlens_over_floor"] <= CREDITLENS_VS_FLOOR,
                )
            )
        if r["dlt_over_creditlens"] is not None:
            # A stopped dlt's ratio is a lower bound: it passes only if the bound already does.
            out.append(
                target(
                    f"[{n}] dlt at least {DLT_VS_CREDITLENS:.0f}x slower than creditlens",
                    dlt_ratio_text(result, r["dlt_over_creditlens"]),
                    r["dlt_over_creditlens"] >= DLT_VS_CREDITLENS,
                )
            )
        if result.creditlens and n >= RSS_LIMIT_AT:
            rss = result.creditlens.peak_rss_mb
            out.append(
                target(
                    f"[{n}] creditlens peak RSS under {RSS_LIMIT_MB:.0f} MB",
                    f"{rss:.0f} MB",
                    rss < RSS_LIMIT_MB,
                )
            )
    sized = sorted((r for r in results if r.creditlens), key=lambda r: r.entries)
    if len(sized) >= 2 and sized[0].entries < sized[-1].entries:
        small, big = sized[0], sized[-1]
        assert small.creditlens and big.creditlens
        exponent = math.log(big.creditlens.peak_rss_mb / small.creditlens.peak_rss_mb) / math.log(
            big.entries / small.entries
        )
        out.append(
            target(
                f"creditlens peak RSS not linear in N (RSS ~ N^b, b < {RSS_GROWTH_EXPONENT})",
                f"b = {exponent:.2f} ({small.creditlens.peak_rss_mb:.0f} -> "
                f"{big.creditlens.peak_rss_mb:.0f} MB for {small.entries} -> {big.entries})",
                exponent < RSS_GROWTH_EXPONENT,
            )
        )
    for result in results:
        out.append(
            target(
                f"[{result.entries_requested}] every contender saw the same entries",
                f"{result.entries} entries" if not result.problems else "; ".join(result.problems),
                not result.problems,
            )
        )
    return out


# --- output --------------------------------------------------------------------------------


def table(results: list[SizeResult]) -> str:
    header = (
        f"{'entries':>9}  {'contender':<20} {'time s':>9} {'entries/s':>11} "
        f"{'peak RSS MB':>12}  note"
    )
    lines = [header, "-" * len(header)]
    for result in results:
        floor = floor_summary(result)
        for name, level in floor["levels"].items():
            rss = max(m.peak_rss_mb for m in result.floor if m.contender == name)
            rounds = " / ".join(f"{s:.2f}" for s in level["seconds"])
            pages = next(m.detail["pages"] for m in result.floor if m.contender == name)
            best = " <- best" if name == floor["best"] else ""
            lines.append(
                f"{result.entries:>9}  {name:<20} {level['best_s']:>9.2f} "
                f"{result.entries / level['best_s']:>11,.0f} {rss:>12.0f}  "
                f"{pages} requests; rounds {rounds} (spread {level['spread_pct']:.0f}%), "
                f"{level['retries']} transport retries{best}"
            )
        for m in (result.creditlens, result.peer):
            if m is None:
                continue
            note = f"whole process; own step {m.inner_s:.2f}s" if m.inner_s else "whole process"
            if m.stopped:
                note = f"{m.stopped}: a lower bound" if m.lower_bound else m.stopped
            if "pages" in m.detail:
                note += f"; {m.detail['windows']} windows, {m.detail['pages']} requests"
            note += f"; RSS 1 process {m.kernel_peak_rss_mb:.0f}, tree {m.tree_peak_rss_mb:.0f}"
            rate = f"{'-':>11}" if m.stopped else f"{result.entries / m.wall_s:>11,.0f}"
            lines.append(
                f"{result.entries:>9}  {m.contender:<20} {m.wall_s:>9.2f} "
                f"{rate} {m.peak_rss_mb:>12.0f}  {note}"
            )
        r = ratios(result)
        parts = [f"creditlens/floor {r['creditlens_over_floor']:.2f}x"]
        parts.append(f"(ledger step/floor {r['creditlens_ledger_step_over_floor']:.2f}x)")
        if r["dlt_over_creditlens"] is not None:
            parts.append(f"dlt/creditlens {dlt_ratio_text(result, r['dlt_over_creditlens'])}")
        else:
            parts.append("dlt failed" if result.peer else "dlt skipped")
        lines.append(f"{'':>9}  ratios: " + ", ".join(parts))
        lines.append(
            f"{'':>9}  simulator: started in {result.simulator_startup_s:.1f}s, "
            f"peak RSS {result.simulator_peak_rss_mb:.0f} MB; windows {', '.join(result.windows)}"
        )
    return "\n".join(lines)


def to_json(results: list[SizeResult], info: dict[str, Any]) -> dict[str, Any]:
    sizes = []
    for result in results:
        entry = asdict(result)
        entry["floor_summary"] = floor_summary(result)
        entry["ratios"] = ratios(result)
        for key in ("creditlens", "peer"):
            m = getattr(result, key)
            if m is not None:
                entry[key]["entries_per_s"] = None if m.stopped else result.entries / m.wall_s
        sizes.append(entry)
    return {"machine": info, "sizes": sizes, "targets": targets(results)}


# --- command -------------------------------------------------------------------------------


def _sizes(text: str) -> list[int]:
    sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    if not sizes or any(n < 100 for n in sizes):
        raise argparse.ArgumentTypeError("sizes are whole numbers of at least 100")
    return sizes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ingestion", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--entries", type=_sizes, default=[200_000], help="N, or sizes side by side: 200000,1000000"
    )
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--skip-peer", action="store_true", help="leave dlt out")
    parser.add_argument(
        "--peer-max-rss-mb",
        type=float,
        default=PEER_MAX_RSS_MB,
        help="stop dlt once its processes hold this much (its time so far is a lower bound)",
    )
    parser.add_argument("--dlt-python", help="an interpreter with dlt[duckdb] (default: own venv)")
    parser.add_argument(
        "--floor-levels",
        type=floor_levels,
        default=list(FLOOR_LEVELS),
        help="thread counts, asyncN and procsN (default 1,2,4,8,async8,procs2)",
    )
    parser.add_argument(
        "--floor-repeats", type=int, default=2, help="rounds of the floor (default 2)"
    )
    parser.add_argument("--now", default=DEFAULT_NOW, help="the simulated now (fixes the data)")
    parser.add_argument(
        "--history-days",
        type=int,
        default=HISTORY_DAYS,
        help="days of history the N entries spread over (default 730: two API windows)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--skip-warm-up", action="store_true", help=SKIP_WARM_UP_HELP)
    parser.add_argument(
        "--dagster-instance", choices=("persistent", "ephemeral"), help=INSTANCE_HELP
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    use_bytecode_cache(warm=not args.skip_warm_up)
    now = parse_now(args.now)
    dlt_python = None if args.skip_peer else ensure_dlt_python(args.dlt_python)
    info = announce()
    results: list[SizeResult] = []
    with scratch_directory("creditlens-bench-", args.keep) as scratch:
        for entries in args.entries:
            results.append(
                measure_size(
                    entries,
                    now,
                    scratch / str(entries),
                    levels=args.floor_levels,
                    repeats=max(1, args.floor_repeats),
                    dlt_python=dlt_python,
                    peer_max_rss_mb=args.peer_max_rss_mb,
                    history_days=args.history_days,
                    instance=args.dagster_instance,
                )
            )
    load = finish(info)
    print()
    print(table(results))
    print(load)
    print()
    print_targets(targets(results))
    if args.out:
        args.out.write_text(json.dumps(to_json(results, info), indent=2) + "\n", encoding="utf-8")
        print(f"\nfigures written to {args.out}")
    return 1 if any(r.problems for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
