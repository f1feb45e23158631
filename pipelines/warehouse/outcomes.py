"""Reading ``sync_outcomes`` and ``account_status``: one reader for the CLI, the site and checks.

Written through the one writer (``Warehouse.append``); the rows are built by
pipelines/orchestration/sync_outcomes.py, which knows the steps. A warehouse older than the table
answers "nothing recorded", never an error: it predates the record, not the accounts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.read import ReadConnection, open_read_only, rows, table_names

__all__ = ["AccountStatus", "StepOutcome", "account_statuses", "outcomes_of_sync", "read_statuses"]

NEVER_SYNCED = "never synced"


@dataclass(frozen=True)
class StepOutcome:
    account: str
    step: str
    result: str
    error: str | None
    part: str | None = None


@dataclass(frozen=True)
class AccountStatus:
    """An account's latest state; ``never synced`` with no failure for one nothing recorded."""

    account: str
    status: str = NEVER_SYNCED
    last_success_at: datetime | None = None
    last_failure_at: datetime | None = None
    last_failure_step: str | None = None
    last_failure: str | None = None

    @property
    def failing(self) -> bool:
        """Its latest recorded outcome is a failure (after its last success, or with none)."""
        return self.last_failure_at is not None and (
            self.last_success_at is None or self.last_failure_at > self.last_success_at
        )


def outcomes_of_sync(path: Path, sync_id: str, *, lock_timeout_s: float) -> list[StepOutcome]:
    """Every row one sync recorded so far, in the order they were recorded."""
    if not warehouse_exists(path):
        return []
    with open_read_only(path, lock_timeout_s) as con:
        if "sync_outcomes" not in table_names(con):
            return []
        found = rows(
            con,
            "SELECT account, step, result, error, part FROM sync_outcomes WHERE sync_id = ? "
            "ORDER BY recorded_at",
            [sync_id],
        )
    return [StepOutcome(*row) for row in found]


def read_statuses(con: ReadConnection, accounts: Sequence[str]) -> list[AccountStatus]:
    """``accounts`` in their order (the accounts file's), then any other account recorded; an
    account nothing recorded is ``never synced``."""
    recorded: dict[str, AccountStatus] = {}
    if "account_status" in table_names(con):
        for row in rows(
            con,
            "SELECT account, status, last_success_at, last_failure_at, last_failure_step, "
            "last_failure FROM account_status ORDER BY account",
        ):
            recorded[row[0]] = AccountStatus(*row)
    names = [*accounts, *(a for a in recorded if a not in accounts)]
    return [recorded.get(name, AccountStatus(name)) for name in names]


def account_statuses(
    path: Path, accounts: Sequence[str], *, lock_timeout_s: float
) -> list[AccountStatus]:
    """``read_statuses`` in a connection of its own; every account never synced without a
    warehouse."""
    if not warehouse_exists(path):
        return [AccountStatus(name) for name in accounts]
    with open_read_only(path, lock_timeout_s) as con:
        return read_statuses(con, accounts)
