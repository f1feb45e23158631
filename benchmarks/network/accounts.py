"""``accounts``: N companies in one simulator, ONE `creditlens sync` of them all, against the
slowest account's rate floor; peak RSS of the sync's whole process tree.

With more than one account the sync is configured as an agency would, by an accounts file
(benchmarks/peers/creditlens_sync.py's ``accounts_environment``); with one, by the CREDITLENS_*
variables alone. With 10 accounts or fewer a table per account follows; the JSON always has
every account.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.harness.contenders import sync_env, whole_range
from benchmarks.harness.sync_result import check_accounts, check_rows, read_sync
from benchmarks.harness.targets import target
from benchmarks.network.conditions import company_names, count_all, rate_limited_spec, serving
from benchmarks.network.phases import phases, phases_table
from benchmarks.network.report import Report, Row, count, fmt
from benchmarks.peers.creditlens_sync import run_sync

ACCOUNTS_VS_FLOOR = 1.3  # one sync of N accounts within 1.3x of the slowest account's floor
ACCOUNTS_RSS_MB = 1024.0  # ... in under 1 GB for the whole process tree


def accounts(args: argparse.Namespace, scratch: Path) -> Report:
    spec, rate = rate_limited_spec(args)
    names = company_names(args.accounts)
    single = len(names) == 1
    with serving(args, scratch, names, ("creditlens", "floor"), spec) as platform:
        windows = [str(w) for w in platform.windows]
        counted = count_all(platform, {name: windows for name in names})
        floors = {name: pages / rate for name, (_, pages) in counted.items()}
        slowest = max(floors, key=lambda name: floors[name])
        print(f"slowest account's rate floor {floors[slowest]:.1f}s ({slowest})")
        workdir = scratch / "creditlens"
        env = sync_env(platform, workdir, args.account_concurrency, args.dagster_instance)
        since = whole_range(platform)
        run = run_sync(env, workdir, since, timeout_s=args.sync_timeout_s, phases=bool(args.phases))
        print(f"creditlens sync of {len(names)} accounts: {run.wall_s:.2f}s")
        traffic = platform.traffic()
    expected = {name: entries for name, (entries, _) in counted.items()}
    result = read_sync(run, workdir, names, traffic)
    problems = check_accounts(result, expected, single) + check_rows(result, expected)
    floor_s = floors[slowest]
    ratio = run.wall_s / floor_s
    own_floor_s = max(t.served for t in result.traffic.values()) / rate
    steps = sorted(
        (line.ledger_s, name) for name in names if (line := result.line(name, single)) is not None
    )
    rows = [
        Row(
            "slowest account's rate floor",
            floor_s,
            counted[slowest][1],
            vs_floor=1.0,
            note=f"{slowest}: {counted[slowest][1]} requests needed / {rate:g} per s",
        ),
        Row(
            f"creditlens sync, {len(names)} accounts, one process",
            run.wall_s,
            result.served,
            result.rate_limited,
            run.peak_rss_mb,
            ratio,
            note=f"whole process tree; the busiest key's requests / rate: {own_floor_s:.1f}s",
        ),
    ]
    if steps:
        median = statistics.median(s for s, _ in steps)
        rows.append(
            Row(
                "accounts' ledger steps",
                steps[-1][0],
                note=f"fastest {steps[0][0]:.1f}s ({steps[0][1]}), median {median:.1f}s, "
                f"slowest {steps[-1][0]:.1f}s ({steps[-1][1]})",
            )
        )
    per_account = [
        {
            "account": name,
            "entries": expected[name],
            "requests_needed": counted[name][1],
            "rate_floor_s": floors[name],
            "served": result.traffic[name].served,
            "rate_limited": result.traffic[name].rate_limited,
            "errors": result.traffic[name].errors,
            "ledger": asdict(line) if (line := result.line(name, single)) else None,
            "sync_run": asdict(r) if (r := result.runs.get(name)) else None,
        }
        for name in names
    ]
    figures = {
        "rate_per_s": rate,
        "accounts": len(names),
        "account_concurrency": args.account_concurrency or len(names),
        "configured_by": "CREDITLENS_* variables" if single else "accounts file",
        "slowest_account": slowest,
        "slowest_rate_floor_s": floor_s,
        "creditlens_wall_s": run.wall_s,
        "creditlens_over_slowest_floor": ratio,
        "floor_with_busiest_key_requests_s": own_floor_s,
        "creditlens_peak_rss_mb": run.peak_rss_mb,
        "creditlens_tree_peak_rss_mb": run.tree_peak_rss_mb,
        "requests_served": result.served,
        "rate_limited": result.rate_limited,
        "server_errors": result.server_errors,
        "per_account": per_account,
        "simulator_peak_rss_mb": platform.peak_rss_mb,
    }
    targets = [
        target(
            f"one sync of {len(names)} accounts within {ACCOUNTS_VS_FLOOR}x of the slowest "
            "account's rate floor",
            f"{ratio:.2f}x ({run.wall_s:.1f}s against {floor_s:.1f}s)",
            ratio <= ACCOUNTS_VS_FLOOR,
        ),
        target(
            f"peak RSS of the process tree under {ACCOUNTS_RSS_MB:.0f} MB",
            f"{run.peak_rss_mb:.0f} MB",
            run.peak_rss_mb < ACCOUNTS_RSS_MB,
        ),
        target(
            "zero failed requests after retries, every account landed",
            f"exit {run.returncode}, {result.server_errors} error answers, "
            f"{result.rate_limited} 429s absorbed",
            not problems and result.server_errors == 0,
        ),
    ]
    if args.phases:
        figures["phases"] = phases(run.stderr, run.wall_s)
    report = Report(
        "accounts",
        platform.network,
        sum(expected.values()),
        len(names),
        rows,
        figures,
        targets,
        problems,
    )
    if len(names) <= 10:
        report.extra_tables.append(_accounts_table(per_account))
    if args.phases:  # the sync's own stamps: its runs, the one landing, the one snapshot store
        title = "phases of the sync (benchmarks/sync_phases.py's stamps)"
        report.extra_tables.append(phases_table(title, figures["phases"]))
    return report


def _accounts_table(per_account: list[dict[str, Any]]) -> tuple[str, list[str], list[list[str]]]:
    header = ["account", "entries", "rate floor s", "ledger step s", "requests", "429s"]
    rows = [
        [
            a["account"],
            count(a["entries"]),
            fmt(a["rate_floor_s"]),
            fmt(a["ledger"]["ledger_s"] if a["ledger"] else None),
            count(a["served"]),
            count(a["rate_limited"]),
        ]
        for a in per_account
    ]
    return "per account", header, rows
