"""Fetching a billing snapshot and landing it when it changed."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from pipelines.api.client import PlatformClient
from pipelines.config.account import AccountSettings
from pipelines.snapshots.registry import SnapshotEndpoint
from pipelines.snapshots.rows import SnapshotRows, configured_fields, shape_warning
from pipelines.warehouse.writer import SnapshotLanding, Warehouse

log = logging.getLogger(__name__)

# SnapshotResult's fields that are not metadata keys (each count is a key of its own).
_UNRECORDED = ("warning", "counts")


@dataclass(frozen=True)
class SnapshotResult:
    """One snapshot fetched; its metadata keys are defined here and read back here only."""

    account: str
    stored: bool  # False: unchanged since the last one, nothing written
    content_hash: str
    rows: int
    shape_ok: bool
    warning: str | None = None  # logged when it happens, not recorded
    counts: dict[str, int] = field(default_factory=dict)  # e.g. items, campaigns

    def metadata(self) -> dict[str, Any]:
        """Its fields under their own names (so a field added is recorded without a second
        list to update), then each count as a key of its own."""
        recorded = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in _UNRECORDED
        }
        return {**recorded, **self.counts}

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> SnapshotResult:
        known = {f.name for f in fields(cls)}
        return cls(
            account=str(metadata.get("account", "")),
            stored=bool(metadata.get("stored", False)),
            shape_ok=bool(metadata.get("shape_ok", True)),
            content_hash=str(metadata.get("content_hash", "")),
            rows=int(metadata.get("rows", 0)),
            counts={k: v for k, v in metadata.items() if k not in known and isinstance(v, int)},
        )


def build_rows(
    endpoint: SnapshotEndpoint,
    doc: Any,
    *,
    account: AccountSettings,
    run_id: str,
    fetched_at: datetime,
) -> SnapshotRows:
    base = {"account": account.name, "fetched_at": fetched_at, "run_id": run_id}
    fields = configured_fields(account.snapshot_fields, account.summary_balance_field)
    return endpoint.rows(doc, base, fields)


@dataclass(frozen=True)
class FetchedSnapshot:
    """One account's snapshot of one kind, read and shaped, not stored yet: a step stores every
    account's snapshots of every kind in one transaction."""

    account: str
    table: str
    rows: SnapshotRows
    warning: str | None

    def landing(self) -> SnapshotLanding:
        return SnapshotLanding(self.table, self.account, self.rows.content_hash, self.rows.rows)

    def result(self, stored: bool) -> SnapshotResult:
        return SnapshotResult(
            account=self.account,
            stored=stored,
            shape_ok=self.rows.shape_ok,
            content_hash=self.rows.content_hash,
            rows=len(self.rows.rows),
            warning=self.warning,
            counts=dict(self.rows.meta),
        )


def fetch_snapshot(
    client: PlatformClient, endpoint: SnapshotEndpoint, *, account: AccountSettings, run_id: str
) -> FetchedSnapshot:
    doc = client.get_json(endpoint.path)
    rows = build_rows(endpoint, doc, account=account, run_id=run_id, fetched_at=datetime.now(UTC))
    warning = None
    if rows.problem is not None:
        warning = shape_warning(f"GET {endpoint.path}", rows.problem)
        log.warning(warning)
    return FetchedSnapshot(account.name, endpoint.table, rows, warning)


def snapshot(
    client: PlatformClient,
    warehouse: Warehouse,
    endpoint: SnapshotEndpoint,
    *,
    account: AccountSettings,
    run_id: str,
) -> SnapshotResult:
    """Fetches and stores one account's snapshot on its own (the step stores all at once)."""
    fetched = fetch_snapshot(client, endpoint, account=account, run_id=run_id)
    landing = fetched.landing()
    return fetched.result(
        warehouse.land_snapshot(landing.table, landing.account, landing.content_hash, landing.rows)
    )
