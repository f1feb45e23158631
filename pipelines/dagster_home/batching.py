"""Storing a run's batch of asset events in two transactions, for both of the CLI's instances.

Dagster hands a storage whole batches of events when ``DAGSTER_EVENT_BATCH_SIZE`` is set
(pipelines/cli/runner.py), but its SQL event logs only loop over them: each asset event opens a
connection to insert it, another to index it, and asks the database whether its tables exist on
the way. A backfill over N days stores N materializations, so that is most of what a long
history's first sync costs in Dagster. A storage built with ``BatchedAssetEvents`` writes a
batch's rows (the events, then their index rows and asset tables) in one transaction each, and
remembers the tables it has seen; the rows are the ones Dagster's own ``store_event`` writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dagster._core.events import ASSET_EVENTS
from dagster._core.events.log import EventLogEntry


def is_asset_event(event: EventLogEntry) -> bool:
    return event.is_dagster_event and event.dagster_event_type in ASSET_EVENTS


class BatchedAssetEvents:
    """Put before a ``SqlEventLogStorage`` subclass in the bases."""

    # SQLite's storage keeps each run in a database of its own and copies asset events into an
    # index database, under ids of the index's own; an in-memory log has one database for both.
    MIRRORS_INTO_INDEX = True

    def has_table(self, table_name: str) -> bool:
        """Asked once per asset event; a table, once there, stays."""
        seen = self.__dict__.setdefault("_seen_tables", set())
        if table_name not in seen and super().has_table(table_name):  # type: ignore[misc]
            seen.add(table_name)
        return table_name in seen

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """Consecutive asset events of one run in one transaction per database, in order; any
        other event as Dagster stores it (check and run events have bookkeeping of their own)."""
        chunk: list[EventLogEntry] = []
        for event in events:
            if is_asset_event(event) and (not chunk or chunk[0].run_id == event.run_id):
                chunk.append(event)
                continue
            self._store_asset_events(chunk)
            chunk = [event] if is_asset_event(event) else []
            if not chunk:
                self.store_event(event)  # type: ignore[attr-defined]
        self._store_asset_events(chunk)

    def _store_asset_events(self, events: Sequence[EventLogEntry]) -> None:
        """What ``store_event`` does for each asset event, for all of them at once."""
        if not events:
            return
        storage: Any = self
        statements = [storage.prepare_insert_event(event) for event in events]
        with storage.run_connection(events[0].run_id) as conn:
            ids = [conn.execute(statement).inserted_primary_key[0] for statement in statements]
        with storage.index_transaction() as conn:
            for event, statement, event_id in zip(events, statements, ids, strict=True):
                if self.MIRRORS_INTO_INDEX:
                    event_id = conn.execute(statement).inserted_primary_key[0]
                storage._store_asset_event_tags(conn, [event], [event_id])
                storage._store_asset_event(conn, event, event_id)
        self._stored(events)

    def _stored(self, events: Sequence[EventLogEntry]) -> None:
        """Called once a batch is stored (the in-memory log tells its watchers then)."""
