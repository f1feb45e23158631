"""``unlimited``: no rate limit, only the round trip; creditlens against the raw httpx floor at
several concurrency levels (``--floor-levels``), the best level the line to beat.

The floor runs as benchmarks.ingestion runs it (thread counts, ``asyncN``, ``procsN``); the
concurrency creditlens converged to is read from its ledger line once it prints one, and the
requests it kept in flight are measured either way.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from benchmarks.harness.contenders import (
    Measured,
    best_by_level,
    floor_note,
    floor_problems,
    floor_round,
    sync_env,
    whole_range,
)
from benchmarks.harness.sync_result import check_accounts, check_rows, read_sync
from benchmarks.harness.targets import target
from benchmarks.network.conditions import network_spec, serving
from benchmarks.network.report import (
    Report,
    Row,
    creditlens_note,
    fmt,
    in_flight,
    reported_concurrency,
)
from benchmarks.peers.creditlens_sync import run_sync
from benchmarks.peers.simulated_company import COMPANY

UNLIMITED_FLOOR_LEVELS = ("4", "16", "32", "64", "async64")
UNLIMITED_VS_FLOOR = 1.5  # creditlens within 1.5x of the best raw floor


def unlimited(args: argparse.Namespace, scratch: Path) -> Report:
    spec = network_spec(args.latency_ms, None, None)
    floor: list[Measured] = []
    with serving(args, scratch, [COMPANY], ("creditlens", "floor"), spec) as platform:
        reader = platform.company(COMPANY, "floor")
        for round_ in range(1, args.floor_repeats + 1):
            floor += floor_round(reader, args.floor_levels, round_, scratch / "floor")
        workdir = scratch / "creditlens"
        env = sync_env(platform, workdir, None, args.dagster_instance)
        run = run_sync(env, workdir, whole_range(platform), timeout_s=args.sync_timeout_s)
        print(f"creditlens sync: {run.wall_s:.2f}s")
        traffic = platform.traffic()
    entries = floor[0].entries
    problems = floor_problems(floor, entries)
    result = read_sync(run, workdir, [COMPANY], traffic)
    problems += check_accounts(result, {COMPANY: entries}, single=True)
    problems += check_rows(result, {COMPANY: entries})
    best = best_by_level(floor)
    fastest = min(best.values(), key=lambda m: m.seconds)
    line = result.line(COMPANY, single=True)
    own = result.runs.get(COMPANY)
    mine = result.traffic[COMPANY]
    rows = [
        Row(
            name,
            m.seconds,
            m.detail["pages"],
            None,
            m.peak_rss_mb,
            m.seconds / fastest.seconds,
            note=floor_note(floor, name) + ("; best" if m is fastest else ""),
        )
        for name, m in best.items()
    ]
    ratio = run.wall_s / fastest.seconds
    rows.append(
        Row(
            "creditlens sync",
            run.wall_s,
            mine.served,
            mine.rate_limited,
            run.peak_rss_mb,
            ratio,
            note=creditlens_note(line, own, None, spec.latency_ms),
        )
    )
    figures = {
        "floor_best": fastest.contender,
        "floor_best_s": fastest.seconds,
        "floor": [asdict(m) for m in floor],
        "floor_retries": sum(m.detail["retries"] for m in floor),
        "creditlens_wall_s": run.wall_s,
        "creditlens_over_floor": ratio,
        "creditlens_ledger_step_over_floor": line.ledger_s / fastest.seconds if line else None,
        "creditlens_requests_served": mine.served,
        "creditlens_ledger_requests": own.requests if own else None,
        "creditlens_reported": line.reported if line else {},
        "creditlens_concurrency": reported_concurrency(line),
        "creditlens_in_flight": in_flight(own, spec.latency_ms),
        "creditlens_peak_rss_mb": run.peak_rss_mb,
        "simulator_peak_rss_mb": platform.peak_rss_mb,
    }
    flight = figures["creditlens_in_flight"]
    targets = [
        target(
            f"creditlens within {UNLIMITED_VS_FLOOR}x of the best raw floor",
            f"{ratio:.2f}x ({run.wall_s:.1f}s against {fastest.contender} {fastest.seconds:.1f}s)",
            ratio <= UNLIMITED_VS_FLOOR,
        ),
        target(
            "the concurrency creditlens converged to (for the record)",
            f"{figures['creditlens_concurrency']}; measured {fmt(flight, 1)} in flight",
            True,
        ),
    ]
    return Report("unlimited", platform.network, entries, 1, rows, figures, targets, problems)
