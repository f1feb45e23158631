"""What runs after what: the refresh follows the ledger's data, not the clock.

The daily refresh used to fire 30 minutes after the ledger sync was scheduled, whether that sync
had finished, failed or was still running. Now the snapshots, the reconciliation and the reports
are requested by a successful materialization of ``ledger_entries`` (Dagster's declarative
automation, evaluated by ``creditlens_automation``), together in one run: snapshots first, so
the cross-checks compare the ledger with figures fetched after it, then the reconciliation, then
the reports. The reconciliation's findings are ERROR checks that do not block: the reports are
rebuilt over them and show them (a report held back would look stale exactly when there is
something to see). A failed sync materializes nothing and requests nothing; a ledger whose
blocking check failed (completeness, exactness), or one still running, holds the refresh back.

A CLI sync refreshes the snapshots and reconciles in its own process, so its runs (tagged
``CLI_RUN_TAG``) request nothing here. The ``daily_refresh`` schedule keeps its name and time as
a safety net for instances where the automation sensor is off: it requests the refresh only when
the latest ledger sync succeeded and nothing reconciled it since (``refresh_request``).
"""

from __future__ import annotations

from datetime import timedelta

from dagster import (
    AssetKey,
    AssetSelection,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    DefaultSensorStatus,
    EventLogEntry,
    FreshnessPolicy,
    RunRequest,
    RunsFilter,
    SkipReason,
)

from pipelines.orchestration.runs import UNFINISHED

LEDGER = AssetKey("ledger_entries")
RECONCILED = AssetKey("balance_breaks")  # every account's, one asset
LEDGER_JOB = "ledger_sync"
# Tags every run `creditlens sync` executes in-process (pipelines/dagster_home/instance.py).
CLI_RUN_TAG = "creditlens/cli"


def _ledger(condition: AutomationCondition) -> AutomationCondition:
    return AutomationCondition.asset_matches(LEDGER, condition)


def ledger_synced() -> AutomationCondition:
    """A day of the ledger materialized since the previous tick, by a run not of the CLI."""
    return _ledger(
        AutomationCondition.newly_updated()
        & ~AutomationCondition.executed_with_tags(tag_keys={CLI_RUN_TAG})
    ).with_label("ledger synced (outside the CLI)")


def ledger_settled() -> AutomationCondition:
    """No ledger run in progress, and no blocking check of the ledger failed."""
    failed = AutomationCondition.any_checks_match(
        AutomationCondition.check_failed(), blocking_only=True
    )
    return (~_ledger(AutomationCondition.in_progress()) & ~_ledger(failed)).with_label(
        "ledger settled (not running, blocking checks passed)"
    )


def after_ledger_sync() -> AutomationCondition:
    """The snapshots: fetched after each ledger sync."""
    return (
        ledger_synced().since_last_handled() & ledger_settled() & ~AutomationCondition.in_progress()
    ).with_label("after a ledger sync")


def with_the_refresh() -> AutomationCondition:
    """The reconciliation and the reports: after a ledger sync, in the run of the snapshots,
    never over an upstream check that blocks."""
    upstream_requested = AutomationCondition.any_deps_match(
        AutomationCondition.will_be_requested()
    ).with_label("upstream requested this tick")
    return (
        (ledger_synced() | upstream_requested).since_last_handled()
        & ledger_settled()
        & ~AutomationCondition.any_deps_in_progress()
        & ~AutomationCondition.in_progress()
        & AutomationCondition.all_deps_blocking_checks_passed()
    ).with_label("after a ledger sync")


automation_sensor = AutomationConditionSensorDefinition(
    "creditlens_automation",
    target=AssetSelection.all(),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Requests the snapshots, reconciliation and reports after each ledger sync.",
)


def ledger_freshness(stale_after_hours: float) -> FreshnessPolicy:
    """Stale when the ledger (or what follows it) has not materialized for that long."""
    return FreshnessPolicy.time_window(fail_window=timedelta(hours=stale_after_hours))


def _latest_reconciliation(instance: DagsterInstance) -> EventLogEntry | None:
    """The latest reconciliation (of any account: one asset holds every account's)."""
    return instance.get_latest_materialization_event(RECONCILED)


def refresh_request(instance: DagsterInstance, run_key_prefix: str) -> RunRequest | SkipReason:
    """The daily refresh, only over a ledger sync that finished well and is not reconciled yet."""
    latest = instance.get_runs(RunsFilter(job_name=LEDGER_JOB), limit=1)
    if latest and latest[0].status in UNFINISHED:
        return SkipReason(f"the ledger sync (run {latest[0].run_id}) has not finished")
    if latest and latest[0].status != DagsterRunStatus.SUCCESS:
        return SkipReason(
            f"the latest ledger sync (run {latest[0].run_id}) ended {latest[0].status.value}: "
            "nothing to refresh over"
        )
    synced = instance.get_latest_materialization_event(LEDGER)
    if synced is None:
        return SkipReason("the ledger was never synced")
    reconciled = _latest_reconciliation(instance)
    if reconciled is not None and reconciled.timestamp >= synced.timestamp:
        return SkipReason(f"the ledger sync of run {synced.run_id} is already reconciled")
    return RunRequest(run_key=f"{run_key_prefix}-{synced.run_id}")


def request_after_reconciliation(
    run: DagsterRun, job: str, run_key: str, cli_does: str, own: str
) -> RunRequest | SkipReason:
    """A run of ``job`` after a run that reconciled, unless the CLI ran that one (``cli_does``
    it itself) or it was ``job``'s own (``own``): the one rule the alerts' and the month close's
    sensors follow."""
    run_id = run.run_id
    if CLI_RUN_TAG in (run.tags or {}):
        return SkipReason(f"run {run_id} was started by the CLI, which {cli_does}")
    if run.job_name == job:
        return SkipReason(own)
    reconciled = run.job_name == "reconciliation_run" or any(
        key == RECONCILED for key in run.asset_selection or set()
    )
    if not reconciled:
        return SkipReason(f"run {run_id} did not reconcile")
    return RunRequest(run_key=f"{run_key}-after-{run_id}")
