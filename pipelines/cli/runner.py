"""Running the Dagster definitions in-process, for the CLI.

The CLI is a thin shell over the same jobs the UI runs; what it adds is a progress display and
turning a failed run into one line a person can act on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from dagster import DagsterInstance, Definitions
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

# Dagster's console logger prints every step, and a failure with its stack trace; the CLI prints
# its own summary and one line per failure instead (the event log keeps everything).
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


class RunFailed(RuntimeError):
    """A job failed; the message is the first failure's own message, without a traceback."""


@dataclass
class RunOutcome:
    job: str
    success: bool
    run_id: str = ""
    materializations: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: dict[str, tuple[bool, str, dict[str, Any]]] = field(default_factory=dict)


# Dagster's own switches, for an instance that dies with the process. A backfill over N days
# otherwise stores N planned and N materialization events one by one (about 4 ms each in the
# in-memory SQLite log: 6 s for two years, whatever the entries); nobody reads them after exit.
# Planned events become one per asset with the run's partition subset, and the materializations
# are handed to the storage as one batch. A persistent instance keeps Dagster's defaults: there
# the UI shows each day, and marks a failed run's days as failed.
EPHEMERAL_EVENT_SETTINGS = {
    "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS": "true",
    "DAGSTER_EVENT_BATCH_SIZE": "1000",
}


def instance() -> DagsterInstance:
    """The persistent instance when DAGSTER_HOME is set (runs then show in the UI)."""
    if os.environ.get("DAGSTER_HOME"):
        return DagsterInstance.get()
    return DagsterInstance.ephemeral()


@contextmanager
def event_settings(dagster_instance: DagsterInstance) -> Iterator[None]:
    """Dagster reads these from the environment during a run: set for this run only, and only
    where nothing outlives it; a value the user set wins."""
    added = []
    if dagster_instance.is_ephemeral:
        added = [name for name in EPHEMERAL_EVENT_SETTINGS if name not in os.environ]
        os.environ.update({name: EPHEMERAL_EVENT_SETTINGS[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def run_job(
    defs: Definitions,
    job_name: str,
    dagster_instance: DagsterInstance,
    *,
    first: date | None = None,
    last: date | None = None,
) -> RunOutcome:
    job = defs.resolve_job_def(job_name)
    tags: dict[str, str] = {}
    if first is not None and last is not None:
        tags = {
            ASSET_PARTITION_RANGE_START_TAG: first.isoformat(),
            ASSET_PARTITION_RANGE_END_TAG: last.isoformat(),
        }
    with event_settings(dagster_instance):
        result = job.execute_in_process(
            run_config=QUIET, instance=dagster_instance, tags=tags, raise_on_error=False
        )
    outcome = RunOutcome(job_name, result.success, result.run_id)
    for event in result.all_events:
        if event.is_step_materialization:
            mat = event.step_materialization_data.materialization
            outcome.materializations[mat.asset_key.to_user_string()] = {
                k: getattr(v, "value", v) for k, v in mat.metadata.items()
            }
        elif event.event_type_value == "ASSET_CHECK_EVALUATION":
            data = event.asset_check_evaluation_data
            outcome.checks[data.check_name] = (
                data.passed,
                str(getattr(data.severity, "value", data.severity)),
                {k: getattr(v, "value", v) for k, v in data.metadata.items()},
            )
    if not result.success:
        raise RunFailed(first_failure(result) or f"the {job_name} run failed")
    return outcome


def first_failure(result: Any) -> str | None:
    for event in result.all_events:
        if event.is_step_failure:
            error = event.step_failure_data.error
            # Dagster wraps the user's exception; its cause holds the message we wrote.
            while (
                error is not None
                and error.cause is not None
                and "DagsterExecutionStepExecutionError" in (error.cls_name or "")
            ):
                error = error.cause
            if error is None:
                continue
            message = (error.message or "").strip()
            name = error.cls_name or ""
            # "pipelines.api.errors.Unauthorized: text" -> "text"
            head, sep, rest = message.partition(": ")
            if sep and head.rsplit(".", 1)[-1] == name:
                message = rest
            return message.splitlines()[0] if message else name
    return None
