"""Runs that write the warehouse queue on its pool, visibly, instead of blocking in a step.

Every asset that writes the warehouse is in the pool ``warehouse``, whose limit (1, at run
granularity) is in the dagster.yaml the project ships. Here one run is in progress (a CLI-style
run, held up on the warehouse's lock by the test) and a second is queued: Dagster's run queue
(the counter its daemon asks before dequeuing) keeps the second in the queue on that pool while
the first runs, and lets it go once the first is done.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter
from dagster._core.op_concurrency_limits_counter import GlobalOpConcurrencyLimitsCounter

from pipelines.cli.runner import RunOutcome, run_job
from pipelines.definitions import build_definitions
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.warehouse.lock import file_lock
from tests.dagster.support import Env, Start, cli_instance, home, run_log


def _queue_blocks(dagster_instance: DagsterInstance, queued_run_id: str) -> tuple[bool, dict]:
    """What Dagster's queued-run daemon decides for the queued run, and why."""
    queued = dagster_instance.get_run_by_id(queued_run_id)
    assert queued is not None
    in_progress = dagster_instance.get_run_records(
        RunsFilter(statuses=[DagsterRunStatus.STARTING, DagsterRunStatus.STARTED])
    )
    storage = dagster_instance.event_log_storage
    counter = GlobalOpConcurrencyLimitsCounter(
        dagster_instance,
        [queued],
        in_progress,
        concurrency_keys=storage.get_concurrency_keys(),
        pool_limits=storage.get_pool_limits(),
        pool_granularity=dagster_instance.get_concurrency_config().pool_config.pool_granularity,
    )
    return counter.is_blocked(queued), dict(counter.get_blocked_run_debug_info(queued))


def _until_waiting(dagster_instance: DagsterInstance) -> str:
    """The first run's word that it waits for the lock, once it is said (empty if never)."""
    for _ in range(400):
        for run in dagster_instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED])):
            for entry in run_log(dagster_instance, run.run_id):
                if "waiting for the warehouse lock" in entry.user_message:
                    return entry.user_message
        time.sleep(0.05)
    return ""


def test_a_second_writer_waits_in_the_queue_on_the_warehouse_pool(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = simulated("small")
    settings = creditlens_env(s, persistent_dagster=True)
    home(monkeypatch, tmp_path)
    dagster_instance = cli_instance()
    defs = build_definitions(settings)
    assert dagster_instance.event_log_storage.get_pool_limits()[0].name == WAREHOUSE_POOL

    outcome: list[RunOutcome] = []
    with file_lock(settings.warehouse, exclusive=True, timeout_s=60):
        first = threading.Thread(
            target=lambda: outcome.append(run_job(defs, "snapshot_sync", dagster_instance))
        )
        first.start()
        waiting = _until_waiting(dagster_instance)
        assert waiting, "the first run never said it waits for the warehouse lock"
        # As the launchpad would submit it (a queued run needs the code server's origin: the
        # counter below is what the queue decides with, whatever the run's own status).
        second = dagster_instance.create_run_for_job(defs.resolve_job_def("snapshot_sync"))
        blocked, why = _queue_blocks(dagster_instance, second.run_id)
        assert blocked, why
        assert second.run_op_concurrency is not None
        assert second.run_op_concurrency.all_pools == {WAREHOUSE_POOL}
    first.join(timeout=120)
    assert outcome and outcome[0].success
    assert not _queue_blocks(dagster_instance, second.run_id)[0]  # the pool is free again
    # Meanwhile the first run's step said on what it waited, and for how long.
    assert "held by a reader" not in waiting and "giving up after 600 s" in waiting
    messages = [e.user_message for e in run_log(dagster_instance, outcome[0].run_id)]
    assert any("got the warehouse lock after waiting" in m for m in messages)
