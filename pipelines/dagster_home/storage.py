"""The CLI's view of a Dagster instance: its SQLite storage writing a run's batch of asset events
in two transactions, and no copy of the terminal's output.

A backfill over N days records N planned events and N materializations. Dagster's SQLite event
log stores each one by itself: a new engine, connection and commit in the run's database, then
again in the index, about 20 ms an event on the project's machine (18 s of Dagster alone for a
two-year backfill, against 2.3 s in an ephemeral instance: benchmarks/RESULTS.md). Dagster hands
a storage whole batches when ``DAGSTER_EVENT_BATCH_SIZE`` is set, but the SQLite storage only
loops over them. This subclass writes a batch's rows (the run's events, their copy in the index,
the asset tables) in one transaction per database (pipelines/dagster_home/batching.py), keeps
one connection to each database for the process (pipelines/dagster_home/one_connection.py; the
run database too) and remembers which tables exist, instead of building an engine and opening
the file for every event and every question: the same two-year backfill then costs what it
costs in an ephemeral instance (which batches the same way: pipelines/dagster_home/ephemeral.py).

The files are Dagster's own: only the CLI's process writes through this class, and `dagster dev`
reads the same folder with the stock storage. ``creditlens_instance`` builds the instance from a
folder's dagster.yaml and swaps this storage in only where that file names no storage, leaving
Dagster's default SQLite storage: a folder whose dagster.yaml names one, another database or
Dagster's own SQLite storage (``storage: sqlite: base_dir: ...``, the way to record without this
class), is used exactly as configured. The same goes for the compute log manager, which a CLI
run does without (its output is on the terminal; Dagster would otherwise start two `tail`
processes and a watcher per step to copy it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from dagster import DagsterInstance

# A folder's configuration, to swap a part before from_ref opens it: from_config cannot swap one.
from dagster._core.instance.ref import InstanceRef

# Subclassed to write a batch at once through one connection: Dagster exports no storage class.
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

# Subclassed to go through one connection: Dagster exports no storage class.
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage

# The busy timeout Dagster's SQLite storages give each connection, kept for ours: not exported.
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS

# Dagster's default storage of a folder, subclassed to hold the two above: not exported.
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage

# How an instance's configuration names a class (InstanceRef's fields): Dagster exports no name.
from dagster._serdes import ConfigurableClassData
from sqlalchemy.engine import Connection

from pipelines.dagster_home.alembic_scripts import read_revision_scripts_once
from pipelines.dagster_home.batching import BatchedAssetEvents
from pipelines.dagster_home.one_connection import OneConnection, ThroughOneConnection

read_revision_scripts_once()

# The keys of a dagster.yaml that choose the storage: today's, and the older one per storage.
STORAGE_KEYS = ("storage", "run_storage", "event_log_storage", "schedule_storage")
# What Dagster's configuration of a folder names where its dagster.yaml chooses nothing (module,
# class): tests/dagster/test_private_api.py checks the installed Dagster still names these.
DEFAULT_STORAGE = ("dagster._core.storage.sqlite_storage", "DagsterSqliteStorage")
DEFAULT_COMPUTE_LOGS = ("dagster._core.storage.local_compute_log_manager", "LocalComputeLogManager")
# A CLI run prints to the terminal itself: copying its stdout and stderr into files (two `tail`
# processes and a watcher per step) would only slow it down, as an ephemeral instance never does.
NO_COMPUTE_LOGS = ConfigurableClassData(
    "dagster._core.storage.noop_compute_log_manager", "NoOpComputeLogManager", "{}\n"
)


class BatchingSqliteEventLogStorage(BatchedAssetEvents, SqliteEventLogStorage):
    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._shards: dict[str, OneConnection] = {}  # before Dagster's init, which may connect
        super().__init__(base_dir, inst_data)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        """Dagster's, through each database's one connection (pipelines/dagster_home/
        one_connection.py) instead of a new engine and connection per event."""
        with self._db_lock:
            one = self._shards.get(shard)
            if one is None:
                one = self._shards[shard] = OneConnection(
                    self.conn_string_for_shard(shard),
                    foreign_keys=False,
                    timeout=SQLITE_BUSY_TIMEOUT_SECONDS,
                )
                if shard not in self._initialized_dbs:
                    self._initdb(one.engine)  # sets WAL mode on a new database
                    self._initialized_dbs.add(shard)
                one.sync_at_checkpoints()
            with one.transaction() as conn:
                yield conn

    def dispose(self) -> None:
        with self._db_lock:
            for one in self._shards.values():
                one.close()
            self._shards.clear()
        super().dispose()


class OneConnectionSqliteRunStorage(ThroughOneConnection, SqliteRunStorage):
    """Dagster's SQLite run storage through its database's one connection."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(conn_string, inst_data)
        self._one = OneConnection(
            conn_string, foreign_keys=False, timeout=SQLITE_BUSY_TIMEOUT_SECONDS
        )
        self._one.sync_at_checkpoints()


class BatchingSqliteStorage(DagsterSqliteStorage):
    """Dagster's default SQLite storage with the batching event log above, and its run storage
    through one connection."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(base_dir, inst_data)  # creates or migrates the run database
        runs: Any = self._run_storage
        self._run_storage = OneConnectionSqliteRunStorage(runs._conn_string, runs.inst_data)
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


def names_its_storage(home: Path) -> bool:
    """Whether the folder's dagster.yaml chooses the instance's storage itself, in any of the
    forms Dagster reads (``storage``, or the older one key per storage), Dagster's SQLite too."""
    path = home / "dagster.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    return isinstance(config, dict) and any(config.get(key) for key in STORAGE_KEYS)


def creditlens_instance(home: Path) -> DagsterInstance:
    """The instance of ``home`` as its dagster.yaml describes it, for a CLI process: batches
    written in one go, and no copy of the terminal's output (where Dagster's defaults stand)."""
    ref = InstanceRef.from_dir(str(home))
    if _is(ref.storage_data, DEFAULT_STORAGE) and not names_its_storage(home):
        base_dir = yaml.safe_load(ref.storage_data.config_yaml)["base_dir"]
        ref = ref._replace(
            storage_data=ConfigurableClassData(
                __name__, BatchingSqliteStorage.__name__, yaml.safe_dump({"base_dir": base_dir})
            )
        )
    if _is(ref.compute_logs_data, DEFAULT_COMPUTE_LOGS):
        ref = ref._replace(compute_logs_data=NO_COMPUTE_LOGS)
    return DagsterInstance.from_ref(ref)
