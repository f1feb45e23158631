"""The CLI's event logs store a batch of events exactly as Dagster's own storage stores them
one by one: the same rows under the same ids, the same index, partitions and tags.

The events are a real ledger backfill's (12 daily partitions, each with its materialization and
metadata), read back from a stock ephemeral instance and stored again, in one batch, into a
stock storage and into the CLI's batching one side by side: for the ephemeral instance
(pipelines/dagster_home/ephemeral.py) and for the SQLite folder a persistent one keeps
(pipelines/dagster_home/storage.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance, EventLogEntry
from dagster._core.storage.event_log import InMemoryEventLogStorage
from dagster._core.storage.event_log.base import EventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from pipelines.config.settings import Settings
from pipelines.dagster_home.ephemeral import BatchingInMemoryEventLogStorage, ephemeral_instance
from pipelines.dagster_home.storage import BatchingSqliteEventLogStorage
from tests.conftest import Disposing, creditlens_variables, serving
from tests.dagster.support import LEDGER, Env, Start, run_log, sync_days

DAYS = 12
Pair = Callable[[Path], tuple[EventLogStorage, EventLogStorage]]


def _in_memory(_: Path) -> tuple[EventLogStorage, EventLogStorage]:
    return InMemoryEventLogStorage(), BatchingInMemoryEventLogStorage()


def _sqlite(folder: Path) -> tuple[EventLogStorage, EventLogStorage]:
    return (
        SqliteEventLogStorage(str(folder / "stock")),
        BatchingSqliteEventLogStorage(str(folder / "batching")),
    )


@pytest.fixture(scope="module")
def backfill(tmp_path_factory: pytest.TempPathFactory) -> list[EventLogEntry]:
    """Every event of one ledger backfill, as a stock ephemeral instance recorded them."""
    folder = tmp_path_factory.mktemp("backfill")
    with serving("small") as s, pytest.MonkeyPatch.context() as monkeypatch:
        for name, value in creditlens_variables(s, folder).items():
            monkeypatch.setenv(name, value)
        with DagsterInstance.ephemeral() as dagster_instance:
            outcome = sync_days(Settings.from_env(), dagster_instance, s.first_day, DAYS)
            assert outcome.success
            return run_log(dagster_instance, outcome.run_id)


def _stored(storage: EventLogStorage, run_id: str, keys: list[AssetKey]) -> dict[str, Any]:
    """What a reader (the UI, the CLI's checks) sees of the run in ``storage``."""
    records = storage.get_records_for_run(run_id, limit=10_000).records
    materialized = {
        key: [
            (r.storage_id, r.partition_key, r.event_log_entry)
            for r in storage.fetch_materializations(key, limit=10_000).records
        ]
        for key in keys
    }
    entries = {r.asset_entry.asset_key: r.asset_entry for r in storage.get_asset_records(keys)}
    return {
        "records": [(r.storage_id, r.event_log_entry) for r in records],
        "materialized": materialized,
        "partitions": {key: storage.get_materialized_partitions(key) for key in keys},
        "tags": {key: storage.get_event_tags_for_asset(key) for key in keys},
        "entries": entries,
    }


@pytest.mark.parametrize("pair", [_in_memory, _sqlite], ids=["ephemeral", "sqlite"])
def test_a_batch_is_stored_as_dagster_stores_each_event(
    backfill: list[EventLogEntry], pair: Pair, tmp_path: Path, disposing: Disposing
) -> None:
    stock, batching = (disposing(storage) for storage in pair(tmp_path))
    run_id = backfill[0].run_id
    keys = sorted(
        {
            e.dagster_event.asset_key
            for e in backfill
            if e.is_dagster_event and e.dagster_event.asset_key
        },
        key=lambda k: k.to_user_string(),
    )
    assert LEDGER in keys and len(backfill) > DAYS
    for event in backfill:
        stock.store_event(event)
    batching.store_event_batch(backfill)
    expected = _stored(stock, run_id, keys)
    assert len(expected["partitions"][LEDGER]) == DAYS
    assert _stored(batching, run_id, keys) == expected


def test_watchers_of_the_ephemeral_log_hear_each_event_in_order(
    backfill: list[EventLogEntry], disposing: Disposing
) -> None:
    run_id = backfill[0].run_id
    heard: dict[str, list[tuple[EventLogEntry, str]]] = {"stock": [], "batching": []}
    for name, storage in (
        ("stock", disposing(InMemoryEventLogStorage())),
        ("batching", disposing(BatchingInMemoryEventLogStorage())),
    ):
        storage.watch(
            run_id, None, lambda event, cursor, name=name: heard[name].append((event, cursor))
        )
        if name == "stock":
            for event in backfill:
                storage.store_event(event)
        else:
            storage.store_event_batch(backfill)
    assert [e for e, _ in heard["batching"]] == backfill
    assert heard["batching"] == heard["stock"]


def test_the_cli_ephemeral_instance_is_ephemeral_and_batches(
    simulated: Start, creditlens_env: Env, disposing: Disposing
) -> None:
    """A sync in it records what a sync in Dagster's records: every day materialized once."""
    s = simulated("small")
    settings = creditlens_env(s)
    dagster_instance = disposing(ephemeral_instance())
    assert dagster_instance.is_ephemeral
    assert isinstance(dagster_instance.event_log_storage, BatchingInMemoryEventLogStorage)
    outcome = sync_days(settings, dagster_instance, s.first_day, DAYS)
    assert outcome.success
    assert len(dagster_instance.get_materialized_partitions(LEDGER)) == DAYS
