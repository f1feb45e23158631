"""``rate-limited``: a backfill against its rate floor, with dlt syncing the same company at the
same time.

The rate floor is requests needed / rate. dlt runs beside creditlens with a key of its own (the
limit is per key, and both wait on the network: one after the other the run would take the sum),
bounded in time: stopped, its time so far is a lower bound.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.harness.contenders import (
    Measured,
    dlt_problems,
    run_dlt,
    sync_env,
    whole_range,
)
from benchmarks.harness.sync_result import check_accounts, check_rows, read_sync
from benchmarks.harness.targets import target
from benchmarks.network.conditions import count_all, rate_limited_spec, serving, together
from benchmarks.network.report import Report, Row, creditlens_note, in_flight
from benchmarks.peers.creditlens_sync import run_sync
from benchmarks.peers.dlt_venv import ensure_dlt_python
from benchmarks.peers.measured import ChildRun
from benchmarks.peers.simulated_company import COMPANY, KeyTraffic

RATE_LIMITED_VS_FLOOR = 1.15  # creditlens within 1.15x of the rate floor
# dlt beside creditlens is stopped after this many rate floors (its time so far a lower bound):
# sequential at 80 ms it needs longer than the floor, and the run must not wait for it forever.
PEER_FLOORS = 2.0
PEER_MIN_S = 60.0


def rate_limited(args: argparse.Namespace, scratch: Path) -> Report:
    spec, rate = rate_limited_spec(args)
    dlt_python = None if args.skip_peer else ensure_dlt_python(args.dlt_python)
    with serving(args, scratch, [COMPANY], ("creditlens", "peer", "floor"), spec) as platform:
        windows = [str(w) for w in platform.windows]
        entries, needed = count_all(platform, {COMPANY: windows})[COMPANY]
        floor_s = needed / rate
        peer_max_s = args.peer_max_s or max(PEER_MIN_S, PEER_FLOORS * floor_s)
        print(f"{entries} entries, {needed} requests needed: rate floor {floor_s:.1f}s")
        workdir = scratch / "creditlens"
        env = sync_env(platform, workdir, None, args.dagster_instance)

        def creditlens() -> ChildRun:
            return run_sync(env, workdir, whole_range(platform), timeout_s=args.sync_timeout_s)

        def peer() -> Measured | None:
            if dlt_python is None:
                return None
            return run_dlt(
                platform.company(COMPANY, "peer"),
                dlt_python,
                scratch / "dlt",
                max_s=peer_max_s,
                max_rss_mb=args.peer_max_rss_mb,
            )

        run, dlt = together(creditlens, peer)
        traffic = platform.traffic()
    result = read_sync(run, workdir, [COMPANY], traffic)
    problems = check_accounts(result, {COMPANY: entries}, single=True)
    problems += check_rows(result, {COMPANY: entries})
    problems += dlt_problems(dlt, entries)
    line = result.line(COMPANY, single=True)
    own = result.runs.get(COMPANY)
    mine = result.traffic[COMPANY]
    peer_traffic = traffic.get((COMPANY, "peer"), KeyTraffic())
    own_floor_s = mine.served / rate
    wall = run.wall_s
    rows = [
        Row(
            "rate floor (requests needed / rate)",
            floor_s,
            needed,
            vs_floor=1.0,
            note=f"{len(windows)} windows at pageSize 100, {rate:g} requests/s",
        ),
        Row(
            "creditlens sync",
            wall,
            mine.served,
            mine.rate_limited,
            run.peak_rss_mb,
            wall / floor_s,
            note=creditlens_note(line, own, own_floor_s, spec.latency_ms),
        ),
    ]
    bounded = dlt is not None and dlt.lower_bound
    if dlt is not None:
        rows.append(
            Row(
                "dlt rest_api (same time, own key)",
                dlt.wall_s,
                peer_traffic.served,
                peer_traffic.rate_limited,
                dlt.peak_rss_mb,
                dlt.wall_s / floor_s,
                note=f"{dlt.stopped}: a lower bound" if bounded else dlt.stopped or "whole process",
                lower_bound=bounded,
            )
        )
    failed = result.server_errors + (0 if run.returncode == 0 else 1)
    figures: dict[str, Any] = {
        "rate_per_s": rate,
        "burst": spec.effective_burst,
        "requests_needed": needed,
        "rate_floor_s": floor_s,
        "creditlens_wall_s": wall,
        "creditlens_over_rate_floor": wall / floor_s,
        "creditlens_requests_served": mine.served,
        "creditlens_rate_limited": mine.rate_limited,
        "creditlens_server_errors": mine.errors,
        "creditlens_ledger_requests": own.requests if own else None,
        "creditlens_ledger_retries": own.retries if own else None,
        "creditlens_reported": line.reported if line else {},
        "creditlens_in_flight": in_flight(own, spec.latency_ms),
        "floor_with_creditlens_requests_s": own_floor_s,
        "creditlens_over_own_request_floor": wall / own_floor_s if own_floor_s else None,
        "peer": asdict(dlt) if dlt else None,
        "peer_max_s": peer_max_s if dlt else None,
        "peer_requests_served": peer_traffic.served if dlt else None,
        "peer_rate_limited": peer_traffic.rate_limited if dlt else None,
        "dlt_over_creditlens": dlt.wall_s / wall if dlt else None,
        "dlt_lower_bound": bounded,
        "simulator_peak_rss_mb": platform.peak_rss_mb,
    }
    targets = [
        target(
            f"creditlens within {RATE_LIMITED_VS_FLOOR}x of the rate floor",
            f"{wall / floor_s:.2f}x ({wall:.1f}s against {floor_s:.1f}s)",
            wall / floor_s <= RATE_LIMITED_VS_FLOOR,
        ),
        target(
            "zero failed requests after retries",
            f"exit {run.returncode}, {mine.errors} error answers, "
            f"{mine.rate_limited} 429s absorbed",
            failed == 0 and not problems,
        ),
    ]
    if dlt is not None and not dlt.failed:
        bound = ">= " if bounded else ""
        targets.append(
            target(
                "dlt beside it (for the record)",
                f"dlt/creditlens {bound}{dlt.wall_s / wall:.2f}x",
                True,
            )
        )
    return Report("rate-limited", platform.network, entries, 1, rows, figures, targets, problems)
