"""What Dagster itself costs one reconciliation run per company, before any entry is read.

Three ways to model N companies' reconciliation, each an empty multi-asset run in a child
process of its own on an ephemeral instance with the CLI's event settings, nothing but Dagster's
bookkeeping measured:

- ``per-account assets``: the model of issue 44's "before": each account's four outputs its own
  assets (``acme/balance_breaks``) and three checks per account on them;
- ``per-account checks``: four plain assets, three checks per account
  (``no_hidden_movements__acme``);
- ``one event per step``: four plain assets and three checks whatever N, each account a record of
  the metadata (what pipelines/reconciliation/assets.py does now).

    python -m benchmarks.dagster_accounts [--accounts 50,250,500] [--here]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetKey,
    AssetSpec,
    DagsterInstance,
    MaterializeResult,
    materialize,
    multi_asset,
)

from pipelines.cli.runner import EPHEMERAL_EVENT_SETTINGS, QUIET
from pipelines.orchestration.metadata import account_records

MODES = ("per-account assets", "per-account checks", "one event per step")
OUTPUTS = ("balance_breaks", "breakdown_mismatches", "daily_balance", "ledger_enriched")
RULES = ("no_hidden_movements", "breakdown_matches_ledger", "summary_matches_ledger")
# The per-account models grow as N squared (Dagster looks up every step output for each one
# yielded): a bound keeps a large N from running for an hour; a run past it is reported as such.
CHILD_TIMEOUT_S = 600


def _run_one(accounts: int, mode: str) -> float:
    """One run of the mode's multi-asset; its wall time (in this child)."""
    os.environ.update(EPHEMERAL_EVENT_SETTINGS)
    names = [f"company_{i:05d}" for i in range(accounts)]
    if mode == "per-account assets":
        specs = [AssetSpec(AssetKey([a, o])) for o in OUTPUTS for a in names]
        checks = [
            AssetCheckSpec(f"{r}__{a}", asset=AssetKey([a, "balance_breaks"]))
            for r in RULES
            for a in names
        ]
    elif mode == "per-account checks":
        specs = [AssetSpec(AssetKey(o)) for o in OUTPUTS]
        checks = [
            AssetCheckSpec(f"{r}__{a}", asset=AssetKey("balance_breaks"))
            for r in RULES
            for a in names
        ]
    else:
        specs = [AssetSpec(AssetKey(o)) for o in OUTPUTS]
        checks = [AssetCheckSpec(r, asset=AssetKey("balance_breaks")) for r in RULES]

    @multi_asset(specs=specs, check_specs=checks, name="reconciliation")
    def reconciliation() -> Iterator[MaterializeResult | AssetCheckResult]:
        per = [{"account": a, "passed": True, "entries": 1} for a in names]
        for spec in specs:
            yield MaterializeResult(asset_key=spec.key, metadata={"accounts": accounts})
        for check in checks:
            metadata = account_records(per) if mode == "one event per step" else {"entries": 1}
            yield AssetCheckResult(
                asset_key=check.asset_key, check_name=check.name, passed=True, metadata=metadata
            )

    started = time.perf_counter()
    result = materialize([reconciliation], instance=DagsterInstance.ephemeral(), run_config=QUIET)
    assert result.success
    return time.perf_counter() - started


def _child(accounts: int, mode: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.dagster_accounts", "--child", mode,
               "--accounts", str(accounts)]  # fmt: skip
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=True
        )
    except subprocess.TimeoutExpired:
        return {"accounts": accounts, "mode": mode, "seconds": None}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dagster_accounts")
    parser.add_argument("--accounts", default="50,250,500", help="sizes, comma-separated")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--out", help="write the figures as JSON here")
    parser.add_argument(
        "--here", action="store_true", help="run every model in this process (a smoke run)"
    )
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.accounts.split(",")]
    if args.child:
        seconds = _run_one(sizes[0], args.child)
        print(json.dumps({"accounts": sizes[0], "mode": args.child, "seconds": seconds}))
        return 0
    from benchmarks.harness.machine import announce, finish

    info = announce()
    figures = [
        {"accounts": n, "mode": mode, "seconds": _run_one(n, mode)} if args.here
        else _child(n, mode)
        for n in sizes
        for mode in MODES
    ]  # fmt: skip
    print("| accounts | " + " | ".join(MODES) + " |")
    print("|---:|" + "---:|" * len(MODES))
    for n in sizes:
        cells = []
        for mode in MODES:
            (found,) = [f for f in figures if (f["accounts"], f["mode"]) == (n, mode)]
            s = found["seconds"]
            cells.append(f"> {CHILD_TIMEOUT_S} s" if s is None else f"{s:.2f} s")
        print(f"| {n:,} | " + " | ".join(cells) + " |")
    print(finish(info))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump({"machine": info, "figures": figures}, out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
