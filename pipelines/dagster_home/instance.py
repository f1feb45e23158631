"""The Dagster instance a CLI command records its runs in, shared with `dagster dev`.

Which folder: ``pipelines/dagster_home/home.py``. The warehouse's pool is given its limit there at
once (from dagster.yaml's default), so the UI lists it and its first queued run already waits
on it (Dagster otherwise creates a pool's limit the first time a queued run names it). Every
CLI run is tagged with the process that ran
it, so a run whose process was killed (SIGKILL, a lost machine) is not left "started" forever:
Dagster's run queue counts started runs against the warehouse's pool, and one that never ends
would hold every later run of the UI in the queue. The next CLI command on the instance marks
such runs failed, saying why.
"""

from __future__ import annotations

import os
import socket

from dagster import DagsterInstance, RunsFilter

from pipelines.config.settings import Settings
from pipelines.dagster_home.ephemeral import ephemeral_instance
from pipelines.dagster_home.home import home_for, prepare
from pipelines.dagster_home.storage import creditlens_instance
from pipelines.orchestration.automation import CLI_RUN_TAG
from pipelines.orchestration.runs import IN_A_PROCESS
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.runtime.processes import process_alive

PID_TAG = "creditlens/pid"
HOST_TAG = "creditlens/host"


def instance(settings: Settings | None = None) -> DagsterInstance:
    """The persistent instance of the settings (runs then show in the UI), or an ephemeral one
    when CREDITLENS_DAGSTER_INSTANCE=ephemeral."""
    home = home_for(settings or Settings.from_env())
    if home is None:
        return ephemeral_instance()
    dagster_instance = creditlens_instance(prepare(home))
    declare_pool(dagster_instance)
    fail_orphaned_runs(dagster_instance)
    return dagster_instance


def declare_pool(dagster_instance: DagsterInstance) -> None:
    """The warehouse's pool at the instance's default limit, unless it has a limit already."""
    storage = dagster_instance.event_log_storage
    if (
        dagster_instance.global_op_concurrency_default_limit is not None
        and storage.supports_global_concurrency_limits
        and WAREHOUSE_POOL not in storage.get_concurrency_keys()
    ):
        storage.initialize_concurrency_limit_to_default(WAREHOUSE_POOL)


def cli_tags() -> dict[str, str]:
    """The tags of a run this process executes in-process."""
    return {CLI_RUN_TAG: "true", PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def fail_orphaned_runs(dagster_instance: DagsterInstance) -> list[str]:
    """Marks failed the unfinished CLI runs of this host whose process is gone; their ids."""
    host = socket.gethostname()
    runs = dagster_instance.get_runs(
        RunsFilter(statuses=list(IN_A_PROCESS), tags={CLI_RUN_TAG: "true", HOST_TAG: host})
    )
    failed = []
    for run in runs:
        pid = run.tags.get(PID_TAG, "")
        if pid.isdigit() and int(pid) != os.getpid() and not process_alive(int(pid)):
            dagster_instance.report_run_failed(
                run, f"the creditlens process that ran it (pid {pid} on {host}) is gone"
            )
            failed.append(run.run_id)
    return failed
