"""What a `creditlens sync` child left, read back and checked against what the floor counted.

Its own lines (the ledger line per account, the error lines), the warehouse's records (each
account's last ``sync_runs`` row, its rows in ``ledger_entries``) and, on a steered simulator,
the server's count for its keys. The checks are the benchmarks' one rule: every account fetched
what the floor counted and landed all of it exactly once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.peers.creditlens_sync import (
    LedgerLine,
    SyncRun,
    ledger_lines,
    rows_per_account,
    sync_runs,
)
from benchmarks.peers.measured import ChildRun
from benchmarks.peers.simulated_company import KeyTraffic

ERROR_PREFIX = "creditlens: error: "


@dataclass
class Synced:
    """A `creditlens sync` child and what it left: its lines, the warehouse's records, the
    server's count for its keys (``traffic``, by account; empty counts where none was asked)."""

    run: ChildRun
    lines: dict[str | None, LedgerLine]
    runs: dict[str, SyncRun]
    rows: dict[str, int]
    traffic: dict[str, KeyTraffic]
    errors: list[str]  # the command's own error lines (an account that failed)

    def line(self, account: str, single: bool) -> LedgerLine | None:
        return self.lines.get(None if single else account)

    @property
    def served(self) -> int:
        return sum(t.served for t in self.traffic.values())

    @property
    def rate_limited(self) -> int:
        return sum(t.rate_limited for t in self.traffic.values())

    @property
    def server_errors(self) -> int:
        return sum(t.errors for t in self.traffic.values())


def read_sync(
    run: ChildRun,
    workdir: Path,
    accounts: Sequence[str],
    traffic: Mapping[tuple[str, str], KeyTraffic] | None = None,
) -> Synced:
    """``run``'s output and the warehouse it wrote in ``workdir``; ``traffic``: the server's
    count per (account, key label), of which the ``creditlens`` keys are kept."""
    warehouse = workdir / "warehouse.duckdb"
    errors = [
        line.removeprefix(ERROR_PREFIX)
        for line in run.stderr.splitlines()
        if line.startswith(ERROR_PREFIX)
    ]
    if run.returncode != 0 and not errors:
        errors = run.stderr.strip().splitlines()[-5:] or [f"exit code {run.returncode}"]
    counted = traffic or {}
    return Synced(
        run=run,
        lines=ledger_lines(run.stdout),
        runs=sync_runs(warehouse),
        rows=rows_per_account(warehouse),
        traffic={a: counted.get((a, "creditlens"), KeyTraffic()) for a in accounts},
        errors=errors,
    )


def check_accounts(result: Synced, expected: Mapping[str, int], single: bool) -> list[str]:
    """Every account fetched what the floor counted, and landed all of it exactly once."""
    problems = [f"creditlens: {error}" for error in result.errors]
    if result.run.returncode != 0:
        problems.append(f"creditlens exited with {result.run.returncode}")
    for account, entries in expected.items():
        line = result.line(account, single)
        if line is None:
            problems.append(f"creditlens: no ledger line for {account}")
            continue
        if line.fetched != entries:
            problems.append(f"creditlens: {account} fetched {line.fetched}, the floor {entries}")
        if line.landed + line.quarantined != line.fetched:
            problems.append(f"creditlens: {account} fetched != landed + quarantined")
    return problems


def check_rows(result: Synced, expected: Mapping[str, int]) -> list[str]:
    """The warehouse holds, per account, the entries the API has."""
    return [
        f"creditlens: the warehouse holds {result.rows.get(a, 0)} rows of {a}, the API {n}"
        for a, n in expected.items()
        if result.rows.get(a, 0) != n
    ]
