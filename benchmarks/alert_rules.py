"""What alerts add to a sync: every kind of rule evaluated for many accounts.

    python -m benchmarks.alert_rules [--accounts 50] [--entries 20000] [--keep]

Syncs ``--accounts`` simulated companies of about ``--entries`` ledger entries each (one
simulator, an accounts file), then times the evaluation of seven rules, one of each kind, for
every account: the first evaluation (every rule's baseline) and the next (nothing changed), as a
sync followed by another would. The target (issue 27): under 1 s for 50 accounts x 20k entries.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta
from pathlib import Path

from benchmarks.harness.machine import announce, finish, scratch_directory
from benchmarks.peers.creditlens_sync import accounts_environment
from pipelines.alerts.checking import check_rules
from pipelines.cli.sync_command import run_sync
from pipelines.config.alerting import alerting
from pipelines.config.settings import Settings
from simulator import Scenario, Simulator, serve
from simulator.scenario import CompanySpec, SpendSpikeSpec

HISTORY_DAYS = 100
RULES = """
[[alerts]]
name = "balance"
kind = "balance_below"
threshold = 5000

[[alerts]]
name = "runway"
kind = "runway_below"
days = 30

[[alerts]]
name = "budget"
kind = "budget"
dimension = "agent"
monthly_limit = 1000

[[alerts]]
name = "spikes"
kind = "spend_anomaly"
dimension = "campaign"
min_credits = 20

[[alerts]]
name = "movements"
kind = "hidden_movement"

[[alerts]]
name = "failed"
kind = "sync_failed"

[[alerts]]
name = "stale"
kind = "stale"
hours = 30
"""


def scenario(accounts: int, entries: int) -> Scenario:
    spike = [SpendSpikeSpec(days_ago=1, factor=8.0)]
    return Scenario(
        name="alert-benchmark",
        companies=[
            CompanySpec(
                name=f"co{n:03d}",
                history_days=HISTORY_DAYS,
                entries_per_day=entries / HISTORY_DAYS,
                spend_spikes=spike if n % 5 == 0 else [],
            )
            for n in range(accounts)
        ],
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=50)
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--keep", action="store_true", help="Keep the scratch directory.")
    args = parser.parse_args(argv)
    info = announce()
    sim = Simulator(scenario(args.accounts, args.entries))
    keys = [(c.name, next(k.secret for k in c.keys if k.scope == "full")) for c in sim.companies]
    first = (sim.clock.now - timedelta(days=HISTORY_DAYS - 1)).date()
    with scratch_directory("creditlens-alerts-", args.keep) as scratch, serve(sim) as server:
        env = accounts_environment(server.url, keys, scratch, first, concurrency=8)
        env["CREDITLENS_DAGSTER_INSTANCE"] = "ephemeral"
        rules = Path(env["CREDITLENS_CONFIG"])
        rules.write_text(rules.read_text() + RULES)
        os.environ.update(env)
        settings = Settings.from_env(env)
        began = time.perf_counter()
        report = run_sync(settings, None, None)
        if report.failures():
            raise SystemExit(f"the sync failed: {report.failures()}")
        synced = time.perf_counter() - began
        config = alerting(settings, env)
        names = [a.name for a in settings.accounts]
        timings = []
        for _ in range(2):
            began = time.perf_counter()
            result = check_rules(settings.open_warehouse(), config, names)
            timings.append((time.perf_counter() - began, len(result.changes)))
    (first_s, first_changes), (next_s, next_changes) = timings
    print(f"sync: {args.accounts} accounts x ~{args.entries:,} entries in {synced:.1f}s")
    print(
        f"alerts: {len(config.rules)} rules x {args.accounts} accounts: first evaluation "
        f"{first_s:.3f}s ({first_changes} changes), next {next_s:.3f}s ({next_changes} changes); "
        f"target under 1 s"
    )
    print(finish(info))


if __name__ == "__main__":
    main()
