"""Each sync's outcome per account and step, recorded in ``sync_outcomes`` as the step ends.

A step that works account by account (pipelines/orchestration/account_work.py) records every
account it was given, ok or failed with its line; the CLI records what it does before its runs
(settings, discovery) and the steps an account skipped because an earlier one failed. The runs of
one ``creditlens sync`` carry its sync id in a tag, so the ledger's ``accounts_synced`` check, in
the ledger run, sees the accounts that failed before that run and never reached it. A run launched
from the UI or a schedule is its own sync: its run id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pipelines.orchestration.account_work import AccountFailure, AccountOutcome
from pipelines.warehouse.disk import DiskFull
from pipelines.warehouse.outcome_tables import STEPS
from pipelines.warehouse.writer import Warehouse

SYNC_TAG = "creditlens/sync"


def sync_id_of(tags: Mapping[str, str], run_id: str) -> str:
    return tags.get(SYNC_TAG) or run_id


def outcome_rows(
    sync_id: str,
    step: str,
    *,
    ok: Iterable[str] = (),
    failed: Iterable[AccountFailure] = (),
    skipped: Iterable[str] = (),
    part: str | None = None,
    run_id: str | None = None,
) -> list[dict[str, Any]]:
    if step not in STEPS:
        raise ValueError(f"unknown step {step!r}; expected one of {', '.join(STEPS)}")
    now = datetime.now(UTC)

    def row(account: str, result: str, error: str | None) -> dict[str, Any]:
        return {"sync_id": sync_id, "account": account, "step": step, "recorded_at": now,
                "result": result, "part": part, "error": error, "run_id": run_id}  # fmt: skip

    return [
        *(row(a, "ok", None) for a in ok),
        *(row(f.account, "failed", f.line()) for f in failed),
        *(row(a, "skipped", None) for a in skipped),
    ]


def record_step(
    warehouse: Warehouse,
    step: str,
    outcomes: Sequence[AccountOutcome[Any]],
    *,
    tags: Mapping[str, str],
    run_id: str,
    part: str | None = None,
) -> None:
    """One row per account of a Dagster step: ok, or failed with its line."""
    record_parts(warehouse, step, {part: outcomes}, tags=tags, run_id=run_id)


def record_parts(
    warehouse: Warehouse,
    step: str,
    parts: Mapping[str | None, Sequence[AccountOutcome[Any]]],
    *,
    tags: Mapping[str, str],
    run_id: str,
) -> None:
    """``record_step`` of each part of a step (the snapshots' kinds), in one write: a write is
    an open of the warehouse and a checkpoint, four of them per sync before.

    A full disk that failed the step's accounts may fail their record too (or leave it in
    DuckDB's log, unmerged): the accounts' own lines already say the disk is full and where, and
    must not be replaced by the record's. With every account ok, a record that cannot be written
    fails the step."""
    sync_id = sync_id_of(tags, run_id)
    rows = [
        row
        for part, outcomes in parts.items()
        for row in outcome_rows(
            sync_id,
            step,
            ok=[o.account.name for o in outcomes if o.failure is None],
            failed=[o.failure for o in outcomes if o.failure is not None],
            part=part,
            run_id=run_id,
        )
    ]
    try:
        warehouse.append("sync_outcomes", rows)
    except DiskFull:
        if all(o.failure is None for outcomes in parts.values() for o in outcomes):
            raise
