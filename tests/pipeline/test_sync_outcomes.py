"""``account_status``: each account's latest state, from every sync's outcomes per step.

A success is a sync that landed the account's ledger with no step failed; a failure after the
last success makes it failing; an account with no success is never synced, with its failure
when it has one; an account of the file that no sync recorded is never synced.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipelines.orchestration.account_work import AccountFailure
from pipelines.orchestration.sync_outcomes import outcome_rows
from pipelines.warehouse.outcomes import account_statuses, outcomes_of_sync
from pipelines.warehouse.writer import Warehouse

STEPS = ("ledger", "snapshots", "reconciliation")


def _sync(warehouse: Warehouse, sync_id: str, ok: list[str], failed: dict[str, str]) -> None:
    rows = []
    for step in STEPS:
        broken = [AccountFailure(a, step, why, "ApiError") for a, why in failed.items()
                  if why.startswith(step)]  # fmt: skip
        rows += outcome_rows(sync_id, step, ok=ok, failed=broken)
    warehouse.append("sync_outcomes", rows)
    time.sleep(0.01)  # the next sync ends later


def test_status_follows_the_latest_sync_of_each_account(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse.duckdb", lock_timeout_s=60)
    _sync(warehouse, "s1", ["acme"], {"initech": "ledger: the API key was rejected"})
    _sync(warehouse, "s2", ["globex"], {"acme": "snapshots: the host is unreachable"})
    statuses = {
        s.account: s
        for s in account_statuses(warehouse.path, ["acme", "umbrella"], lock_timeout_s=60)
    }
    assert list(statuses) == ["acme", "umbrella", "globex", "initech"]  # the file's order first
    acme = statuses["acme"]
    assert acme.status == "failing" and acme.failing and acme.last_failure_step == "snapshots"
    assert acme.last_failure == "account acme: snapshots: snapshots: the host is unreachable"
    assert acme.last_success_at is not None and acme.last_failure_at > acme.last_success_at
    assert statuses["globex"].status == "ok" and not statuses["globex"].failing
    initech = statuses["initech"]
    assert initech.status == "never synced" and initech.failing
    assert initech.last_failure is not None and "rejected" in initech.last_failure
    assert (
        statuses["umbrella"].status == "never synced"
        and statuses["umbrella"].last_failure_at is None
    )

    _sync(warehouse, "s3", ["acme"], {})
    again = {s.account: s for s in account_statuses(warehouse.path, ["acme"], lock_timeout_s=60)}[
        "acme"
    ]
    assert again.status == "ok" and not again.failing and again.last_failure is not None
    assert [o.result for o in outcomes_of_sync(warehouse.path, "s3", lock_timeout_s=60)] == [
        "ok"
    ] * len(STEPS)


def test_an_unknown_step_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown step 'history'"):
        outcome_rows("s", "history", ok=["acme"])
