"""The report site rebuilt daily after the refresh and, on the 1st, for the month just ended."""

from datetime import timedelta

from dagster import (
    AssetSelection,
    RunRequest,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
)

from pipelines.reconciliation.assets import reconciliation
from pipelines.reports.assets import reports
from pipelines.schedules import SCHEDULE_TIMEZONE, utc_schedule
from pipelines.snapshots.assets import SNAPSHOT_ASSETS

report_job = define_asset_job(
    "report_build", selection=AssetSelection.assets(reports), description="Build the site."
)

daily_refresh_job = define_asset_job(
    "daily_refresh",
    selection=AssetSelection.assets(*SNAPSHOT_ASSETS, reconciliation, reports),
    description="Snapshots, reconciliation and the report site, after the daily ledger sync.",
)

daily_refresh = utc_schedule(
    "daily_refresh",
    daily_refresh_job,
    "45 0 * * *",
    "Daily at 00:45 UTC, after the ledger sync: snapshots, reconciliation, reports.",
)


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
