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

import sqlalchemy.exc as db_exc
from dagster import EventLogEntry

# The event types Dagster's SQL event logs index as asset events (store_event's test): unexported.
from dagster._core.events import ASSET_EVENTS

# The index database's asset table, whose rows store_event writes: Dagster exports no table schema.
from dagster._core.storage.event_log.schema import AssetKeyTable

# The columns of Dagster's asset table that its ``_get_asset_entry_values`` sets from an event.
INDEX_COLUMN = "last_materialization_timestamp"
ENTRY_COLUMNS = frozenset({"last_materialization", "last_run_id", INDEX_COLUMN})


def is_asset_event(event: EventLogEntry) -> bool:
    return event.is_dagster_event and event.dagster_event_type in ASSET_EVENTS


def _asset_key(event: EventLogEntry) -> str:
    """The event's asset key as the asset table spells it, or "" for an event without one."""
    key = event.dagster_event.asset_key if event.dagster_event else None
    return key.to_string() if key else ""


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
            if self.MIRRORS_INTO_INDEX:
                ids = [conn.execute(statement).inserted_primary_key[0] for statement in statements]
            keyed = [(e, i) for e, i in zip(events, ids, strict=True) if _asset_key(e)]
            storage._store_asset_event_tags(conn, [e for e, _ in keyed], [i for _, i in keyed])
            self._store_asset_entries(conn, keyed)
        self._stored(events)

    def _store_asset_entries(self, conn: Any, keyed: Sequence[tuple[EventLogEntry, int]]) -> None:
        """The asset table's row for each key, as Dagster's one insert-or-update per event leaves
        it: every column the key's events set, each at its latest event's value.

        Walking the events newest first and stopping once every column is set serializes one
        materialization record per key, not one per day of a backfill.
        """
        storage: Any = self
        has_index_cols = storage._has_asset_key_index_cols_on_connection(conn)
        columns = ENTRY_COLUMNS if has_index_cols else ENTRY_COLUMNS - {INDEX_COLUMN}
        by_key: dict[str, list[tuple[EventLogEntry, int]]] = {}
        for event, event_id in keyed:
            by_key.setdefault(_asset_key(event), []).append((event, event_id))
        for key, newest_last in by_key.items():
            values: dict[str, Any] = {}
            for event, event_id in reversed(newest_last):
                if columns <= values.keys():
                    break
                entry = storage._get_asset_entry_values(event, event_id, has_index_cols)
                for column, value in entry.items():
                    values.setdefault(column, value)
            if not values:
                continue
            try:
                conn.execute(AssetKeyTable.insert().values(asset_key=key, **values))
            except db_exc.IntegrityError:
                conn.execute(
                    AssetKeyTable.update().values(**values).where(AssetKeyTable.c.asset_key == key)
                )

    def _stored(self, events: Sequence[EventLogEntry]) -> None:
        """Called once a batch is stored (the in-memory log tells its watchers then)."""
