"""The CLI's ephemeral instance keeps one SQLite connection per in-memory database
(pipelines/dagster_home/one_connection.py): a run opens none of its own, and threads that record
at the same moment (an agency's account workers) each find all they wrote, in order. Dagster's
own in-memory run storage, a connection per statement and no lock, refuses them ("database
table is locked")."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from dagster import DagsterEvent, DagsterEventType, DagsterRun, EventLogEntry
from dagster._core.events import EngineEventData
from sqlalchemy import event

from pipelines.dagster_home.ephemeral import (
    BatchingInMemoryEventLogStorage,
    OneConnectionRunStorage,
    ephemeral_instance,
)
from tests.conftest import Disposing
from tests.dagster.support import LEDGER, Env, Start, sync_days

THREADS = 8
EACH = 40


def _engine_event(run_id: str, n: int) -> EventLogEntry:
    data = DagsterEvent(
        event_type_value=DagsterEventType.ENGINE_EVENT.value,
        job_name="job",
        message=f"{run_id} #{n}",
        event_specific_data=EngineEventData(),
    )
    return EventLogEntry(
        error_info=None,
        level=logging.INFO,
        user_message=f"{run_id} #{n}",
        run_id=run_id,
        timestamp=time.time(),
        dagster_event=data,
        job_name="job",
    )


def test_a_run_opens_no_connection_of_its_own(
    simulated: Start, creditlens_env: Env, disposing: Disposing
) -> None:
    s = simulated("small")
    settings = creditlens_env(s)
    dagster_instance = disposing(ephemeral_instance())
    opened: list[str] = []
    for storage in (dagster_instance.event_log_storage, dagster_instance.run_storage):
        name = type(storage).__name__
        event.listen(storage._engine, "connect", lambda *_, name=name: opened.append(name))  # type: ignore[attr-defined]
    outcome = sync_days(settings, dagster_instance, s.first_day, 5)
    assert outcome.success
    assert len(dagster_instance.get_materialized_partitions(LEDGER)) == 5
    assert opened == []  # Dagster's own storages: a connection per read and per write


def test_threads_recording_at_once_each_find_all_they_wrote(disposing: Disposing) -> None:
    events = disposing(BatchingInMemoryEventLogStorage())
    runs = disposing(OneConnectionRunStorage())

    def record(worker: int) -> list[str]:
        run_id = f"run-{worker}"
        runs.add_run(DagsterRun(job_name="job", run_id=run_id))
        for n in range(EACH):
            if n % 2:
                events.store_event(_engine_event(run_id, n))
            else:
                events.store_event_batch([_engine_event(run_id, n)])
            events.get_records_for_run(run_id, limit=1)  # reads between writes
        records = events.get_records_for_run(run_id, limit=10_000).records
        return [r.event_log_entry.user_message for r in records]

    with ThreadPoolExecutor(THREADS) as pool:
        found = list(pool.map(record, range(THREADS)))
    assert found == [[f"run-{w} #{n}" for n in range(EACH)] for w in range(THREADS)]
    assert {r.run_id for r in runs.get_runs()} == {f"run-{w}" for w in range(THREADS)}
