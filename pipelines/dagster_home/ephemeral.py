"""The CLI's ephemeral instance (CREDITLENS_DAGSTER_INSTANCE=ephemeral): Dagster's own, whose
in-memory event log stores a run's batch of asset events in two transactions, and whose
in-memory storages each keep one SQLite connection (pipelines/dagster_home/one_connection.py).

Dagster's in-memory log opens a new SQLite connection, with two PRAGMAs and a transaction, for
every row it writes, and asks SQLAlchemy whether each table exists for every asset event: a
first sync of two years of history stored its 700-odd day materializations one by one. The
rows written are Dagster's own (pipelines/dagster_home/batching.py); watchers of a run's events
are told of each, in order, once its batch is stored, as they are after each event otherwise.

``DagsterInstance.ephemeral()`` takes no storage of ours, so the instance is built here from the
parts Dagster builds it from, which Dagster exports none of (tests/dagster/test_private_api.py
fails when the pinned Dagster builds it from others).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from dagster import DagsterInstance, EventLogEntry

# The kind DagsterInstance's constructor asks for: Dagster exports no name for it.
from dagster._core.instance import InstanceType

# The run launcher DagsterInstance.ephemeral() uses: Dagster exports no launcher.
from dagster._core.launcher.sync_in_memory_run_launcher import SyncInMemoryRunLauncher

# The run coordinator DagsterInstance.ephemeral() uses: Dagster exports no coordinator.
from dagster._core.run_coordinator.sync_in_memory_run_coordinator import SyncInMemoryRunCoordinator

# Subclassed for its one connection and batches: Dagster exports no storage class.
from dagster._core.storage.event_log import InMemoryEventLogStorage

# The cursor a watcher of the in-memory log is told, as its store_event does: not exported.
from dagster._core.storage.event_log.base import EventLogCursor

# The compute log manager DagsterInstance.ephemeral() uses: Dagster exports no manager.
from dagster._core.storage.noop_compute_log_manager import NoOpComputeLogManager

# The artifact storage DagsterInstance.ephemeral() uses: Dagster exports no artifact storage.
from dagster._core.storage.root import TemporaryLocalArtifactStorage

# Subclassed for its one connection: Dagster exports no storage class.
from dagster._core.storage.runs import InMemoryRunStorage

from pipelines.dagster_home.alembic_scripts import read_revision_scripts_once
from pipelines.dagster_home.batching import BatchedAssetEvents
from pipelines.dagster_home.one_connection import OneConnection, ThroughOneConnection

read_revision_scripts_once()


class OneConnectionEventLogStorage(ThroughOneConnection, InMemoryEventLogStorage):
    """Every read and write of the log through one connection (its run and index connections
    are one database), its question whether a table exists too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._one = OneConnection(self._engine.url, foreign_keys=True)

    def has_table(self, table_name: str) -> bool:
        return self._one.has_table(table_name)


class BatchingInMemoryEventLogStorage(BatchedAssetEvents, OneConnectionEventLogStorage):
    MIRRORS_INTO_INDEX = False

    def _stored(self, events: Sequence[EventLogEntry]) -> None:
        """What ``InMemoryEventLogStorage.store_event`` does after storing each event."""
        for event in events:
            self._storage_id += 1
            for handler in list(self._handlers[event.run_id]):
                try:
                    handler(event, str(EventLogCursor.from_storage_id(self._storage_id)))
                except Exception:
                    logging.exception("a watcher of run %s failed on an event", event.run_id)


class OneConnectionRunStorage(ThroughOneConnection, InMemoryRunStorage):
    def __init__(self) -> None:
        super().__init__()
        self._one = OneConnection(self._engine.url, foreign_keys=True)


def ephemeral_instance() -> DagsterInstance:
    """``DagsterInstance.ephemeral()``, but for its event log."""
    return DagsterInstance(
        instance_type=InstanceType.EPHEMERAL,
        local_artifact_storage=TemporaryLocalArtifactStorage(),
        run_storage=OneConnectionRunStorage(),
        event_storage=BatchingInMemoryEventLogStorage(),
        compute_log_manager=NoOpComputeLogManager(),
        run_coordinator=SyncInMemoryRunCoordinator(),
        run_launcher=SyncInMemoryRunLauncher(),
    )
