"""``daily``: an up-to-date warehouse, the next day appears, then the daily sync behind the
network, end to end and phase by phase.

The warehouse is backfilled at loopback speed with the simulator's clock on the day before
``--now`` (untimed, beside it for the record); the clock moves a day (new entries appear, the
history stays as it was served), the network comes into force, and `creditlens sync --until NOW`
runs through benchmarks/sync_phases.py so its phases are stamped.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.harness.contenders import sync_env, whole_range
from benchmarks.harness.sync_result import check_accounts, check_rows, read_sync
from benchmarks.harness.targets import target
from benchmarks.network.conditions import company_names, count_all, network_spec, section, serving
from benchmarks.network.phases import phases, phases_table
from benchmarks.network.report import Report, Row
from benchmarks.peers.creditlens_sync import run_sync

DAILY_LIMIT_S = 5.0  # a daily sync end to end


def daily(args: argparse.Namespace, scratch: Path) -> Report:
    spec = network_spec(args.latency_ms, args.rate_limit, args.burst)
    names = company_names(args.accounts)
    single = len(names) == 1
    workdir = scratch / "creditlens"
    with serving(
        args, scratch, names, ("creditlens", "floor"), None, days_before=1, said=" (backfill)"
    ) as platform:
        env = sync_env(platform, workdir, args.account_concurrency, args.dagster_instance)
        env["CREDITLENS_LOOKBACK_DAYS"] = str(args.lookback_days)
        since = whole_range(platform)
        backfill = run_sync(env, workdir, since, timeout_s=args.sync_timeout_s, name="backfill")
        print(f"backfill of {platform.first}..{platform.last}: {backfill.wall_s:.1f}s")
        backfilled = read_sync(backfill, workdir, names, platform.traffic())
        platform.advance_days(1)
        platform.configure_network(section(spec))
        platform.reset_traffic()
        print(f"next day {platform.last}: {platform.network}")
        run = run_sync(
            env,
            workdir,
            ["--until", platform.last.isoformat()],
            timeout_s=args.sync_timeout_s,
            phases=True,
            name="daily",
        )
        print(f"daily sync: {run.wall_s:.2f}s")
        traffic = platform.traffic()
        result = read_sync(run, workdir, names, traffic)
        ranges = {
            name: [f"{line.first.isoformat()}..{line.last.isoformat()}"]
            for name in names
            if (line := result.line(name, single)) is not None
        }
        read = count_all(platform, ranges) if ranges else {}
        whole = [str(w) for w in platform.windows]
        history = count_all(platform, {name: whole for name in names})
    problems = [f"backfill: {error}" for error in backfilled.errors]
    problems += check_accounts(result, {n: e for n, (e, _) in read.items()}, single)
    missing = [name for name in names if name not in ranges]
    problems += [f"creditlens: no ledger line for {name}" for name in missing]
    total = {name: entries for name, (entries, _) in history.items()}
    problems += check_rows(result, total)
    steps = phases(run.stderr, run.wall_s)
    lines = [result.line(name, single) for name in names]
    found = [line for line in lines if line is not None]
    days = {(line.last - line.first).days + 1 for line in found}
    fetched = sum(line.fetched for line in found)
    pages = sum(line.pages for line in found)
    rows = [
        Row(
            f"daily sync, {len(names)} account{'s' if len(names) > 1 else ''}",
            run.wall_s,
            result.served,
            result.rate_limited,
            run.peak_rss_mb,
            note=f"whole process; {fetched:,} entries in {pages} pages, "
            f"{'/'.join(str(d) for d in sorted(days))} days each; lookback {args.lookback_days}",
        ),
        Row(
            "the backfill before it (loopback, untimed)",
            backfill.wall_s,
            sum(t.served for t in backfilled.traffic.values()),
            None,
            backfill.peak_rss_mb,
            note=f"{sum(backfilled.rows.values()):,} entries up to the day before",
        ),
    ]
    figures = {
        "accounts": len(names),
        "entries_per_account": args.entries,
        "lookback_days": args.lookback_days,
        "daily_wall_s": run.wall_s,
        "daily_peak_rss_mb": run.peak_rss_mb,
        "daily_requests_served": result.served,
        "daily_rate_limited": result.rate_limited,
        "daily_entries_fetched": fetched,
        "daily_pages": pages,
        "ranges": {name: ranges[name][0] for name in ranges},
        "phases": steps,
        "backfill_wall_s": backfill.wall_s,
        "warehouse_entries": sum(result.rows.values()),
        "simulator_peak_rss_mb": platform.peak_rss_mb,
    }
    targets = [
        target(
            f"daily sync end to end under {DAILY_LIMIT_S:.0f}s ({len(names)} account"
            f"{'s' if len(names) > 1 else ''}, {sum(total.values()):,} entries in the warehouse)",
            f"{run.wall_s:.2f}s",
            run.wall_s < DAILY_LIMIT_S,
        ),
        target(
            "every day read again was fetched whole, the warehouse holds the API's entries",
            "yes" if not problems else "; ".join(problems[:3]),
            not problems,
        ),
    ]
    report = Report(
        "daily", platform.network, sum(total.values()), len(names), rows, figures, targets, problems
    )
    report.extra_tables.append(
        phases_table("phases of the daily sync (benchmarks/sync_phases.py's stamps)", steps)
    )
    return report
