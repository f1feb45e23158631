"""The daily refresh's job and its safety-net schedule, and the month-end report.

The snapshots, the reconciliation and the reports follow each ledger sync by themselves
(pipelines/orchestration/automation.py). The ``daily_refresh`` schedule keeps its name and time for
instances where that automation is off, but no longer fires blind: it requests the refresh only
over a ledger sync that finished well and is not reconciled yet, and says why it skips.
"""

from datetime import timedelta

from dagster import (
    AssetSelection,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    define_asset_job,
    schedule,
)

from pipelines.orchestration.automation import refresh_request
from pipelines.orchestration.schedules import SCHEDULE_TIMEZONE
from pipelines.reconciliation.assets import GROUP as RECONCILED
from pipelines.reports.assets import reports
from pipelines.snapshots.assets import SNAPSHOT_ASSETS

report_job = define_asset_job(
    "report_build", selection=AssetSelection.assets(reports), description="Build the site."
)

daily_refresh_job = define_asset_job(
    "daily_refresh",
    selection=AssetSelection.assets(*SNAPSHOT_ASSETS, reports) | AssetSelection.groups(RECONCILED),
    description="Snapshots, reconciliation and the report site, after the daily ledger sync.",
)


@schedule(
    job=daily_refresh_job,
    cron_schedule="45 0 * * *",
    execution_timezone=SCHEDULE_TIMEZONE,
    name="daily_refresh",
    description="Daily at 00:45 UTC: snapshots, reconciliation, reports, only over a ledger sync "
    "that succeeded and is not reconciled yet (the automation usually did it already).",
)
def daily_refresh(context: ScheduleEvaluationContext) -> RunRequest | SkipReason:
    return refresh_request(context.instance, "refresh")


@schedule(
    job=report_job,
    cron_schedule="0 2 1 * *",
    execution_timezone=SCHEDULE_TIMEZONE,
    name="monthly_finance_statement",
    description="On the 1st at 02:00 UTC: the report site about the month just ended.",
)
def monthly_finance_statement(context: ScheduleEvaluationContext) -> RunRequest:
    first = context.scheduled_execution_time.date().replace(day=1)
    previous = (first - timedelta(days=1)).strftime("%Y-%m")
    return RunRequest(
        run_key=f"statement-{previous}",
        run_config={"ops": {"reports": {"config": {"month": previous}}}},
    )
