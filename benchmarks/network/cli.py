"""The command line of ``python -m benchmarks.network``: one subcommand per benchmark, the
options they share (the network, the simulated now, the output), and the run around them (the
machine and its load average printed, a scratch directory, the table, targets and JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import benchmarks.network
from benchmarks.harness.contenders import INSTANCE_HELP, PEER_MAX_RSS_MB, floor_levels
from benchmarks.harness.machine import (
    DEFAULT_NOW,
    SKIP_WARM_UP_HELP,
    announce,
    finish,
    parse_now,
    scratch_directory,
    use_bytecode_cache,
)
from benchmarks.harness.targets import print_targets
from benchmarks.network.accounts import accounts
from benchmarks.network.conditions import LATENCY_MS, RATE_LIMIT, network_spec
from benchmarks.network.daily import daily
from benchmarks.network.rate_limited import PEER_FLOORS, PEER_MIN_S, rate_limited
from benchmarks.network.report import Report, table, to_json
from benchmarks.network.unlimited import UNLIMITED_FLOOR_LEVELS, unlimited
from benchmarks.peers.simulated_company import HISTORY_DAYS

SYNC_TIMEOUT_S = 3600
DESCRIPTION = (benchmarks.network.__doc__ or "").splitlines()[0]


def _whole(text: str) -> int:
    value = int(text.replace("_", ""))
    if value < 1:
        raise argparse.ArgumentTypeError("a whole number of at least 1")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.network", description=DESCRIPTION)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", type=Path, help="write the figures as JSON here")
    common.add_argument("--keep", action="store_true", help="keep the scratch directory")
    common.add_argument("--skip-warm-up", action="store_true", help=SKIP_WARM_UP_HELP)
    common.add_argument(
        "--phases",
        action="store_true",
        help="accounts: run the sync through benchmarks/sync_phases.py (stamps on stderr)",
    )
    common.add_argument(
        "--now", type=parse_now, default=parse_now(DEFAULT_NOW), help="the simulated now"
    )
    common.add_argument(
        "--history-days",
        type=_whole,
        default=HISTORY_DAYS,
        help="days each company's entries spread over (default 730: two API windows)",
    )
    common.add_argument(
        "--latency-ms",
        default=LATENCY_MS,
        metavar="MEAN[,JITTER]",
        help="the round trip every request takes (default 80)",
    )
    common.add_argument("--sync-timeout-s", type=float, default=SYNC_TIMEOUT_S)
    common.add_argument(
        "--dagster-instance", choices=("persistent", "ephemeral"), help=INSTANCE_HELP
    )
    limited = argparse.ArgumentParser(add_help=False)
    limited.add_argument("--burst", type=_whole, help="the bucket's size (default: one second's)")
    commands = parser.add_subparsers(dest="benchmark", required=True)

    rate = commands.add_parser("rate-limited", parents=[common, limited], help="backfill vs rate")
    rate.add_argument("--entries", type=_whole, default=1_000_000)
    rate.add_argument("--rate-limit", default=RATE_LIMIT, metavar="N/s")
    rate.add_argument("--skip-peer", action="store_true", help="leave dlt out")
    rate.add_argument("--dlt-python", help="an interpreter with dlt[duckdb] (default: own venv)")
    rate.add_argument(
        "--peer-max-s",
        type=float,
        help=f"stop dlt after this long (default {PEER_FLOORS:g} rate floors, at least "
        f"{PEER_MIN_S:.0f}s); its time so far is then a lower bound",
    )
    rate.add_argument("--peer-max-rss-mb", type=float, default=PEER_MAX_RSS_MB)

    free = commands.add_parser("unlimited", parents=[common], help="no limit: vs the raw floor")
    free.add_argument("--entries", type=_whole, default=1_000_000)
    free.add_argument(
        "--floor-levels",
        type=floor_levels,
        default=list(UNLIMITED_FLOOR_LEVELS),
        help="thread counts, asyncN and procsN (default 4,16,32,64,async64)",
    )
    free.add_argument("--floor-repeats", type=_whole, default=1)

    many = commands.add_parser("accounts", parents=[common, limited], help="N accounts, one sync")
    many.add_argument("--accounts", type=_whole, default=50)
    many.add_argument("--entries", type=_whole, default=20_000, help="entries per account")
    many.add_argument("--rate-limit", default=RATE_LIMIT, metavar="N/s")
    many.add_argument("--account-concurrency", type=_whole, help="default: every account at once")

    day = commands.add_parser("daily", parents=[common, limited], help="the next day's sync")
    day.add_argument("--accounts", type=_whole, default=1)
    day.add_argument("--entries", type=_whole, default=1_000_000, help="entries per account")
    day.add_argument("--rate-limit", default=None, metavar="N/s", help="default: none")
    day.add_argument("--lookback-days", type=int, default=7)
    day.add_argument("--account-concurrency", type=_whole, help="default: every account at once")
    return parser.parse_args(argv)


BENCHMARKS: dict[str, Callable[[argparse.Namespace, Path], Report]] = {
    "rate-limited": rate_limited,
    "unlimited": unlimited,
    "accounts": accounts,
    "daily": daily,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        network_spec(
            args.latency_ms, getattr(args, "rate_limit", None), getattr(args, "burst", None)
        )
    except ValueError as error:
        print(f"bad network option: {error}", file=sys.stderr)
        return 2
    use_bytecode_cache(warm=not args.skip_warm_up)
    info = announce()
    with scratch_directory(f"creditlens-network-{args.benchmark}-", args.keep) as scratch:
        report = BENCHMARKS[args.benchmark](args, scratch)
    load = finish(info)
    print(
        f"\n{report.benchmark}: {report.network}; {report.accounts} account(s), "
        f"{report.entries:,} entries\n"
    )
    print(table(report))
    print(f"\n{load}")
    print()
    print_targets(report.targets)
    for problem in report.problems:
        print(f"  problem: {problem}")
    if args.out:
        args.out.write_text(json.dumps(to_json(report, info), indent=2, default=str) + "\n")
        print(f"\nfigures written to {args.out}")
    return 1 if report.problems else 0
