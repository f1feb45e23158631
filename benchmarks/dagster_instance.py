"""What recording a sync in a persistent Dagster instance costs, against an ephemeral one.

    python -m benchmarks.dagster_instance [--entries 50000] [--history-days 730] [--repeats 2]

`creditlens sync` records its runs in a persistent instance by default (a folder beside the
warehouse, so `dagster dev` over the same warehouse shows them); CREDITLENS_DAGSTER_INSTANCE=
ephemeral keeps nothing, as every sync did before. Both run the same command over one simulated
company (its whole history: one daily partition per day, a first sync's backfill), each into a
fresh warehouse, the two modes alternating; then a daily sync (the last 8 days, the lookback)
into each of their warehouses: what every later run pays. Whole processes are timed, start-up
included, as a user waits for them; the ledger step's own time is read from the summary line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from benchmarks.harness.machine import load_line
from benchmarks.peers.creditlens_sync import CreditlensRun, run_creditlens
from benchmarks.peers.simulated_company import SimulatedCompany, simulated_company

NOW = datetime.fromisoformat("2026-06-30T23:59:59+00:00")
MODES = {"ephemeral": "ephemeral", "persistent": "persistent"}
DAILY_DAYS = 8


@dataclass(frozen=True)
class Round:
    mode: str
    backfill: CreditlensRun
    daily: CreditlensRun


def one_round(company: SimulatedCompany, mode: str, workdir: Path, timeout_s: float) -> Round:
    env = {"CREDITLENS_DAGSTER_INSTANCE": MODES[mode]}
    backfill = run_creditlens(
        company.base_url,
        company.key,
        company.account,
        company.first,
        company.last,
        workdir,
        timeout_s=timeout_s,
        extra_env=env,
    )
    daily = run_creditlens(
        company.base_url,
        company.key,
        company.account,
        company.last - timedelta(days=DAILY_DAYS - 1),
        company.last,
        workdir,
        timeout_s=timeout_s,
        extra_env=env,
        ledger_start=company.first,
    )
    return Round(mode, backfill, daily)


def report(rounds: Sequence[Round], days: int) -> list[str]:
    lines = []
    best: dict[tuple[str, str], float] = {}
    for mode in MODES:
        mine = [r for r in rounds if r.mode == mode]
        for what in ("backfill", "daily"):
            runs = [getattr(r, what) for r in mine]
            walls = [run.run.wall_s for run in runs]
            best[(mode, what)] = min(walls)
            rounds_text = " / ".join(f"{w:.2f}" for w in walls)
            ledger = min(run.ledger_s for run in runs)
            label = f"{days} days" if what == "backfill" else f"daily sync, {DAILY_DAYS} days"
            lines.append(
                f"{mode} instance, {label}: {best[(mode, what)]:.2f}s whole command "
                f"(rounds {rounds_text}; ledger step {ledger:.2f}s)"
            )
    for what in ("backfill", "daily"):
        extra = best[("persistent", what)] - best[("ephemeral", what)]
        ratio = best[("persistent", what)] / best[("ephemeral", what)]
        lines.append(f"persistent - ephemeral, {what}: {extra:+.2f}s ({ratio:.2f}x)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=50_000, help="ledger entries")
    parser.add_argument("--history-days", type=int, default=730, help="days they spread over")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of each mode")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per command")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args(argv)
    if args.entries < 1 or args.history_days < DAILY_DAYS:
        parser.error(f"--entries must be positive and --history-days at least {DAILY_DAYS}")
    load_start = os.getloadavg()
    scratch = Path(tempfile.mkdtemp(prefix="creditlens-bench-instance-"))
    rounds: list[Round] = []
    try:
        with simulated_company(
            args.entries, NOW, scratch / "simulator", history_days=args.history_days
        ) as company:
            for n in range(max(1, args.repeats)):
                for mode in MODES:
                    workdir = scratch / f"{mode}-{n}"
                    rounds.append(one_round(company, mode, workdir, args.timeout))
        for line in report(rounds, args.history_days):
            print(line)
        print(load_line(load_start))
    finally:
        if args.keep:
            print(f"scratch: {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
