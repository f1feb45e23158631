"""Where the warehouse is, and the one handle every write goes through.

Each kind of write lives in a module of its own (landing, history, derived, publish); this
handle only carries the location, the analyst copy and how long to wait for the lock, so a
caller holds one object and cannot open the file any other way. Readers use
pipelines/warehouse/read.py instead: nothing there can write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import duckdb

from pipelines.warehouse import append_only, derived, landing, publish
from pipelines.warehouse.append_only import SnapshotLanding
from pipelines.warehouse.connection import open_for_write
from pipelines.warehouse.derived import AccountReplacement, StagedDerived, StagedInvalid
from pipelines.warehouse.landing import InvariantBroken, LandingResult, LedgerLanding

__all__ = [
    "AccountReplacement",
    "InvariantBroken",
    "LandingResult",
    "LedgerLanding",
    "SnapshotLanding",
    "StagedDerived",
    "StagedInvalid",
    "Warehouse",
]


class Warehouse:
    def __init__(
        self, path: Path, analyst_copy: Path | None = None, *, lock_timeout_s: float
    ) -> None:
        """``lock_timeout_s``: CREDITLENS_LOCK_TIMEOUT_S, passed by its one reader
        (``Settings.open_warehouse``); no default, so no caller can quietly wait another time."""
        self.path = Path(path)
        self.analyst_copy = (
            Path(analyst_copy) if analyst_copy else publish.default_analyst_copy(self.path)
        )
        self.lock_timeout_s = lock_timeout_s

    def write(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        return open_for_write(self.path, self.lock_timeout_s)

    def ensure(self) -> None:
        """Creates or upgrades the warehouse and publishes the analyst copy."""
        with self.write():
            pass
        self.publish_analyst_copy()

    def land_ledger(self, ledger: LedgerLanding) -> LandingResult:
        return landing.land_ledger(self.path, self.lock_timeout_s, ledger)

    def land_ledgers(
        self, ledgers: Sequence[LedgerLanding]
    ) -> dict[str, LandingResult | BaseException]:
        """Every account's landing in one transaction; one failing is left out, alone."""
        return landing.land_ledgers(self.path, self.lock_timeout_s, ledgers)

    def land_snapshot(
        self, table: str, account: str, content_hash: str, rows: Sequence[dict[str, Any]]
    ) -> bool:
        return append_only.land_snapshot(
            self.path, self.lock_timeout_s, table, account, content_hash, rows
        )

    def land_snapshots(
        self, snapshots: Sequence[SnapshotLanding]
    ) -> dict[tuple[str, str], bool | BaseException]:
        """Every account's snapshots of every kind in one transaction; per (table, account),
        stored or not, or why it was left out of the commit."""
        return append_only.land_snapshots(self.path, self.lock_timeout_s, snapshots)

    def append(self, table: str, rows: Sequence[dict[str, Any]]) -> int:
        return self.append_tables({table: rows})

    def append_tables(self, tables: Mapping[str, Sequence[dict[str, Any]]]) -> int:
        return append_only.append(self.path, self.lock_timeout_s, tables)

    def replacing_for_account(
        self, account: str, tables: Sequence[str], memory_limit: str | None = None
    ) -> AbstractContextManager[AccountReplacement]:
        return derived.replacing_for_account(
            self.path, self.lock_timeout_s, account, tables, memory_limit
        )

    def reading(
        self, memory_limit: str | None = None
    ) -> AbstractContextManager[AccountReplacement]:
        """Reads for staging a reconciliation, under the shared lock (no write possible)."""
        return derived.reading(self.path, self.lock_timeout_s, memory_limit)

    def commit_derived(
        self,
        accounts: Sequence[StagedDerived],
        memory_limit: str | None = None,
        failed: Sequence[str] = (),
    ) -> None:
        """Every account's staged derived rows in one transaction; the carry of each `failed`
        account marked so its next reconciliation is full."""
        derived.commit_derived(self.path, self.lock_timeout_s, accounts, memory_limit, failed)

    def publish_analyst_copy(self) -> Path:
        return publish.publish_analyst_copy(self.path, self.analyst_copy, self.lock_timeout_s)
