"""When the close is checked without a sync: daily, after the daily sync's usual hour, so a
month whose grace period (each account's own close_after_days) ran out overnight closes even if
no reconciliation followed."""

from __future__ import annotations

from dagster import JobDefinition, ScheduleDefinition

from pipelines.orchestration.schedules import SCHEDULE_TIMEZONE

DAILY = "statement_close_daily"


def daily_close(job: JobDefinition) -> ScheduleDefinition:
    return ScheduleDefinition(
        name=DAILY,
        job=job,
        cron_schedule="30 2 * * *",
        execution_timezone=SCHEDULE_TIMEZONE,
        description="Daily at 02:30 UTC: months past their grace period closed, closed months "
        "restated if their figures changed, and sent.",
    )
