"""Fetching a billing snapshot and landing it when it changed."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from pipelines.api.client import PlatformClient
from pipelines.config.account import AccountSettings
from pipelines.snapshots.registry import SnapshotEndpoint
from pipelines.snapshots.rows import SnapshotRows, configured_fields, shape_warning
from pipelines.warehouse.writer import Warehouse

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


def snapshot(
    client: PlatformClient,
    warehouse: Warehouse,
    endpoint: SnapshotEndpoint,
    *,
    account: AccountSettings,
    run_id: str,
    turn: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> SnapshotResult:
    """Fetches and stores one account's snapshot; ``turn`` is taken around the store only, so
    the accounts of one step fetch side by side and write one at a time."""
    doc = client.get_json(endpoint.path)
    rows = build_rows(endpoint, doc, account=account, run_id=run_id, fetched_at=datetime.now(UTC))
    warning = None
    if rows.problem is not None:
        warning = shape_warning(f"GET {endpoint.path}", rows.problem)
        log.warning(warning)
    with turn():
        stored = warehouse.land_snapshot(endpoint.table, account.name, rows.content_hash, rows.rows)
    return SnapshotResult(
        account=account.name,
        stored=stored,
        shape_ok=rows.shape_ok,
        content_hash=rows.content_hash,
        rows=len(rows.rows),
        warning=warning,
        counts=dict(rows.meta),
    )
