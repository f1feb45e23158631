"""The CLI's view of a Dagster instance: its SQLite storage writing a run's batch of asset events
in two transactions, and no copy of the terminal's output.

A backfill over N days records N planned events and N materializations. Dagster's SQLite event
log stores each one by itself: a new engine, connection and commit in the run's database, then
again in the index, about 20 ms an event on the project's machine (18 s of Dagster alone for a
two-year backfill, against 2.3 s in an ephemeral instance: benchmarks/RESULTS.md). Dagster hands
a storage whole batches when ``DAGSTER_EVENT_BATCH_SIZE`` is set, but the SQLite storage only
loops over them. This subclass writes a batch's rows (the run's events, their copy in the index,
the asset tables) in one transaction per database (pipelines/dagster_home/batching.py), keeps
each database's engine for the process and remembers which tables exist, instead of building an
engine for every event and every question: the same two-year backfill then costs what it costs
in an ephemeral instance (which batches the same way: pipelines/dagster_home/ephemeral.py).

The files are Dagster's own: only the CLI's process writes through this class, and `dagster dev`
reads the same folder with the stock storage. ``creditlens_instance`` builds the instance from a
folder's dagster.yaml and swaps this storage in only where that file left Dagster's default
SQLite storage, so a folder configured for another database is used exactly as configured; the
same goes for the compute log manager, which a CLI run does without (its output is on the
terminal; Dagster would otherwise start two `tail` processes and a watcher per step to copy it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

from pipelines.dagster_home.alembic_scripts import read_revision_scripts_once
from pipelines.dagster_home.batching import BatchedAssetEvents

read_revision_scripts_once()

DEFAULT_STORAGE = ("dagster._core.storage.sqlite_storage", "DagsterSqliteStorage")
DEFAULT_COMPUTE_LOGS = ("dagster._core.storage.local_compute_log_manager", "LocalComputeLogManager")
# A CLI run prints to the terminal itself: copying its stdout and stderr into files (two `tail`
# processes and a watcher per step) would only slow it down, as an ephemeral instance never does.
NO_COMPUTE_LOGS = ConfigurableClassData(
    "dagster._core.storage.noop_compute_log_manager", "NoOpComputeLogManager", "{}\n"
)


class BatchingSqliteEventLogStorage(BatchedAssetEvents, SqliteEventLogStorage):
    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: dict[str, Engine] = {}  # before Dagster's init, which may connect
        super().__init__(base_dir, inst_data)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        """Dagster's, keeping each database's engine for the process instead of building one
        per event; connections are still opened and closed each time (no pool), as the UI's
        process reads the same files."""
        with self._db_lock:
            engine = self._engines.get(shard)
            if engine is None:
                engine = create_engine(
                    self.conn_string_for_shard(shard),
                    poolclass=NullPool,
                    connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
                )
                if shard not in self._initialized_dbs:
                    self._initdb(engine)
                    self._initialized_dbs.add(shard)
                self._engines[shard] = engine
            with engine.connect() as conn, conn.begin():
                yield conn


class BatchingSqliteStorage(DagsterSqliteStorage):
    """Dagster's default SQLite storage with the batching event log above."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(base_dir, inst_data)
        self._event_log_storage = BatchingSqliteEventLogStorage(
            str(Path(base_dir) / "history" / "runs")
        )

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> BatchingSqliteStorage:
        return cls(inst_data=inst_data, **config_value)


def _is(data: ConfigurableClassData | None, default: tuple[str, str]) -> bool:
    return data is not None and (data.module_name, data.class_name) == default


def creditlens_instance(home: Path) -> DagsterInstance:
    """The instance of ``home`` as its dagster.yaml describes it, for a CLI process: batches
    written in one go, and no copy of the terminal's output (where Dagster's defaults stand)."""
    ref = InstanceRef.from_dir(str(home))
    if _is(ref.storage_data, DEFAULT_STORAGE):
        base_dir = yaml.safe_load(ref.storage_data.config_yaml)["base_dir"]
        ref = ref._replace(
            storage_data=ConfigurableClassData(
                __name__, BatchingSqliteStorage.__name__, yaml.safe_dump({"base_dir": base_dir})
            )
        )
    if _is(ref.compute_logs_data, DEFAULT_COMPUTE_LOGS):
        ref = ref._replace(compute_logs_data=NO_COMPUTE_LOGS)
    return DagsterInstance.from_ref(ref)
