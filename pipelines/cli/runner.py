"""Running the Dagster definitions in-process, for the CLI.

The CLI is a thin shell over the same jobs the UI runs; what it adds is a progress display,
the instance both share (pipelines/dagster_home/instance.py), and turning a failed run into one
line a person can act on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from dagster import DagsterEventType, DagsterInstance, Definitions

from pipelines.cli.errors import RunFailed
from pipelines.dagster_home.instance import cli_tags, instance
from pipelines.orchestration.account_work import AccountFailure
from pipelines.orchestration.metadata import records_of
from pipelines.orchestration.runs import partition_range_tags
from pipelines.orchestration.sync_outcomes import SYNC_TAG
from pipelines.runtime import progress

__all__ = ["EPHEMERAL_EVENT_SETTINGS", "RunFailed", "RunOutcome", "instance", "run_job"]

# Dagster's console logger prints every step, and a failure with its stack trace; the CLI prints
# its own summary and one line per failure instead (the event log keeps everything).
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# A blocking check failed (the ledger's completeness or exactness): the run stops there. The
# reconciliation's findings do not block: they are check results of a successful run, which the
# CLI lists (exit 3 with --fail-on-breaks), never a failure of the command.
BLOCKED_BY_CHECKS = "DagsterAssetCheckFailedError"


@dataclass
class RunOutcome:
    job: str
    success: bool
    run_id: str = ""
    # Per asset, what the run recorded: its totals where it recorded them once (an observation,
    # as the ledger does for a range of days), else its materialization's metadata.
    materializations: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: dict[str, tuple[bool, str, dict[str, Any]]] = field(default_factory=dict)
    # Every observation, in order: with several accounts, each account's totals (or failure).
    observations: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # A failed check's own sentence, when it gave one (never its metadata: a dict is not a line).
    descriptions: dict[str, str] = field(default_factory=dict)
    # ``observed``'s index: how many observations it was made of, and each (key, account)'s last.
    _observed: tuple[int, dict[tuple[str, Any], dict[str, Any]]] | None = field(
        default=None, repr=False, compare=False
    )

    def account_failures(self) -> list[AccountFailure]:
        return [
            AccountFailure.from_metadata(meta)
            for _, meta in self.observations
            if meta.get("status") == "failed"
        ]

    def only(self, keys: Collection[str], *, checks: bool) -> RunOutcome:
        """The part of a run that one step of the sync made (its assets; the run's checks with
        ``checks``): one run computes the ledger and the snapshots, the report reads each step
        as before."""
        return RunOutcome(
            self.job,
            self.success,
            self.run_id,
            {k: v for k, v in self.materializations.items() if k in keys},
            dict(self.checks) if checks else {},
            [(k, v) for k, v in self.observations if k in keys],
            dict(self.descriptions) if checks else {},
        )

    def observed(self, key: str, account: str) -> dict[str, Any] | None:
        """What the run observed of ``key`` for ``account`` (its last observation). Looked up
        in an index made once: a scan per account and key made a 5,000-company summary
        quadratic (minutes after the runs had ended)."""
        if self._observed is None or self._observed[0] != len(self.observations):
            last = {
                (k, m.get("account")): m
                for k, m in self.observations
                if m.get("status") != "failed"
            }
            self._observed = (len(self.observations), last)
        return self._observed[1].get((key, account))


# Dagster's own switches, set for a CLI run only. Materializations are handed to the storage as
# one batch: in an ephemeral instance (a backfill over N days otherwise stores N events one by
# one, about 4 ms each in the in-memory log), and in a persistent one, whose storage writes a
# batch in one transaction (pipelines.dagster_home.storage.py; 20 ms an event otherwise). Only an
# instance that dies with the process also plans the run's days in one event: a persistent one
# keeps one planned event per day, so the UI marks the days of a failed run as failed.
EPHEMERAL_EVENT_SETTINGS = {
    "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS": "true",
    "DAGSTER_EVENT_BATCH_SIZE": "1000",
}
PERSISTENT_EVENT_SETTINGS = {"DAGSTER_EVENT_BATCH_SIZE": "1000"}


@contextmanager
def event_settings(dagster_instance: DagsterInstance) -> Iterator[None]:
    """Dagster reads these from the environment during a run: set for this run only; a value
    the user set wins."""
    wanted = (
        EPHEMERAL_EVENT_SETTINGS if dagster_instance.is_ephemeral else PERSISTENT_EVENT_SETTINGS
    )
    added = [name for name in wanted if name not in os.environ]
    os.environ.update({name: wanted[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _print_waits(event: str, data: dict[str, Any]) -> None:
    """A wait for the warehouse's lock, said on stderr as it happens (who holds it, since when)."""
    if event == "warehouse.wait":
        print(data["line"], file=sys.stderr, flush=True)


def run_job(
    defs: Definitions,
    job_name: str,
    dagster_instance: DagsterInstance,
    *,
    first: date | None = None,
    last: date | None = None,
    op_config: dict[str, dict[str, Any]] | None = None,
    sync_id: str | None = None,
) -> RunOutcome:
    """``op_config``: per op (asset) name, its config (the ledger's per-account ``since``);
    ``sync_id``: the sync the run is part of, for ``sync_outcomes``
    (pipelines/orchestration/sync_outcomes.py)."""
    job = defs.resolve_job_def(job_name)
    tags = cli_tags()
    if sync_id is not None:
        tags[SYNC_TAG] = sync_id
    if first is not None and last is not None:
        tags.update(partition_range_tags(first, last))
    with event_settings(dagster_instance), progress.listening(_print_waits):
        ops = {name: {"config": config} for name, config in (op_config or {}).items()}
        result = job.execute_in_process(
            run_config={**QUIET, **({"ops": ops} if ops else {})},
            instance=dagster_instance,
            tags=tags,
            raise_on_error=False,
        )
    outcome = RunOutcome(job_name, result.success, result.run_id)
    totals: set[str] = set()
    for event in result.all_events:
        if event.event_type == DagsterEventType.ASSET_OBSERVATION:
            observation = event.asset_observation_data.asset_observation
            key = observation.asset_key.to_user_string()
            observed = _values(observation.metadata)
            # Every account's record in one event (account_records), or one record itself.
            for values in records_of(observed) or [observed]:
                outcome.observations.append((key, values))
                if values.get("status") != "failed":
                    outcome.materializations[key] = values
                    totals.add(key)
        elif event.is_step_materialization:
            mat = event.step_materialization_data.materialization
            key = mat.asset_key.to_user_string()
            values = _values(mat.metadata)
            if key not in totals and values.get("status") != "failed":  # a failure: its line
                outcome.materializations[key] = values
        elif event.event_type_value == "ASSET_CHECK_EVALUATION":
            data = event.asset_check_evaluation_data
            outcome.checks[data.check_name] = (
                data.passed,
                str(getattr(data.severity, "value", data.severity)),
                _values(data.metadata),
            )
            if data.description:
                outcome.descriptions[data.check_name] = " ".join(data.description.split())
    if not result.success and not _only_accounts_failed(result, outcome):
        raise RunFailed(first_failure(result, outcome) or f"the {job_name} run failed")
    return outcome


def _values(metadata: Any) -> dict[str, Any]:
    return {k: getattr(v, "value", v) for k, v in metadata.items()}


def _step_errors(result: Any) -> list[Any]:
    return [e.step_failure_data for e in result.all_events if e.is_step_failure]


def _only_accounts_failed(result: Any, outcome: RunOutcome) -> bool:
    """Every account of the run failed on its own (pipelines/orchestration/account_work.py): each
    failure is an account's line, which the CLI prints, not one failure of the command."""
    failures = _step_errors(result)
    return bool(outcome.account_failures()) and all(
        f.user_failure_data is not None
        and "accounts_failed" in (f.user_failure_data.metadata or {})
        for f in failures
    )


def first_failure(result: Any, outcome: RunOutcome | None = None) -> str | None:
    for data in _step_errors(result):
        # A known failure ends its step as Dagster's Failure, its description the one line.
        if data.user_failure_data is not None and data.user_failure_data.description:
            return " ".join(data.user_failure_data.description.split())
        error = data.error
        if error is not None and error.cls_name == BLOCKED_BY_CHECKS and outcome is not None:
            said = outcome.descriptions
            failed = [
                name + (f": {said[name]}" if name in said else "")
                for name, (ok, _, _) in outcome.checks.items()
                if not ok
            ]
            return "blocking check failed: " + "; ".join(failed)
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
