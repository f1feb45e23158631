"""Reading a warehouse back, for comparisons with the simulator's ground truth."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import duckdb

from tests.conftest import Simulated

LEDGER_COLUMNS = (
    "strftime(created_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%g') || 'Z', entry_type, amount, "
    "description, has_description, channel, agent_id, campaign_id, balance_after"
)


def landed(path: Path, account: str | None = None) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        where = "WHERE account = ?" if account else ""
        rows = con.execute(
            f"SELECT {LEDGER_COLUMNS} FROM ledger_entries {where}", [account] if account else []
        ).fetchall()
    finally:
        con.close()
    return sorted(rows)


def truth(s: Simulated) -> list[tuple]:
    return sorted(
        (
            e["createdAtText"],
            e["type"],
            Decimal(e["amount"]),
            e["description"],
            e["hasDescription"],
            e["channel"],
            e["agentId"],
            e["campaignId"],
            Decimal(e["balanceAfter"]),
        )
        for e in s.sim.truth(s.company).entries
    )


def table(path: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Runs `creditlens ...` in a child process, the way a user or a scheduler would."""
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
