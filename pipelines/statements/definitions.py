"""The month close in Dagster: the ``statements`` asset partitioned by month, and the job
``statement_close`` that checks every month (closes, restatements, sending), started by a
run-status sensor after each reconciliation and by a daily schedule.

The job is an op, not a partitioned run: one check covers every month of every account (a late
entry restates an old month, a grace period ends the newest), and it records a materialization
of each month partition it closed or restated. Runs of the CLI are not followed: the CLI checks
after its own sync, so nothing is closed or sent twice.
"""

from dagster import (
    DagsterRun,
    DagsterRunStatus,
    DefaultSensorStatus,
    Definitions,
    OpExecutionContext,
    RunRequest,
    RunStatusSensorContext,
    SkipReason,
    job,
    op,
    run_status_sensor,
)

from pipelines.config.settings import Settings
from pipelines.orchestration.automation import request_after_reconciliation
from pipelines.resources.warehouse import WAREHOUSE_POOL, WarehouseResource
from pipelines.statements.assets import build_asset, materializations
from pipelines.statements.delivery import close_and_deliver
from pipelines.statements.schedules import daily_close

JOB = "statement_close"
SENSOR = "statements_after_reconciliation"


def build_definitions(settings: Settings) -> Definitions:
    statements = build_asset(settings)

    @op(name="check_statements", pool=WAREHOUSE_POOL)
    def check_statements(context: OpExecutionContext, warehouse: WarehouseResource) -> None:
        """Every closable month closed, every closed month restated if it changed, and sent."""
        with warehouse.step(context, "statements"):  # type: ignore[arg-type]
            outcome = close_and_deliver(warehouse.warehouse(), settings)
        for event in materializations(outcome):
            context.log_event(event)
        context.log.info(f"statements: {outcome.result.checked or 'nothing to check'}")
        for line in [*outcome.result.lines(), *outcome.queued] or [
            "statements: nothing to close or restate"
        ]:
            context.log.info(line)
        for line in outcome.warnings:
            context.log.warning(line)

    @job(name=JOB, description="Close, restate and send the monthly statements.")
    def statement_close() -> None:
        check_statements()

    @run_status_sensor(
        name=SENSOR,
        run_status=DagsterRunStatus.SUCCESS,
        request_job=statement_close,
        default_status=DefaultSensorStatus.RUNNING,
        description="Requests a close check after each reconciliation not run by the CLI.",
    )
    def after_reconciliation(context: RunStatusSensorContext) -> RunRequest | SkipReason:
        return close_request(context.dagster_run)

    return Definitions(
        assets=[statements],
        jobs=[statement_close],
        sensors=[after_reconciliation],
        schedules=[daily_close(statement_close)],
    )


def close_request(run: DagsterRun) -> RunRequest | SkipReason:
    """A close check after a reconciliation, unless the CLI ran it (it checks itself)."""
    return request_after_reconciliation(
        run, JOB, "statements", "closes its own statements", "a close check"
    )
