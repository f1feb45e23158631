"""The daily ledger sync: yesterday and today, plus a lookback for late or backdated entries."""

from __future__ import annotations

from datetime import timedelta

from dagster import (
    AssetSelection,
    DailyPartitionsDefinition,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
)

from pipelines.orchestration.runs import partition_range_tags
from pipelines.orchestration.schedules import SCHEDULE_TIMEZONE, AssetJob


def build_ledger_job() -> AssetJob:
    """The job takes the ledger asset's partitions; a run's tags give the range of days."""
    return define_asset_job(
        "ledger_sync",
        selection=AssetSelection.assets("ledger_entries"),
        description="Sync a range of UTC days of the ledger (run tags give the range).",
    )


def build_ledger_schedule(
    job: AssetJob, partitions: DailyPartitionsDefinition, lookback_days: int
) -> ScheduleDefinition:
    @schedule(
        job=job,
        cron_schedule="15 0 * * *",
        execution_timezone=SCHEDULE_TIMEZONE,
        name="daily_ledger_sync",
        description=f"Daily at 00:15 UTC: the last {lookback_days} days through today.",
    )
    def daily_ledger_sync(context: ScheduleEvaluationContext) -> RunRequest:
        today = context.scheduled_execution_time.date()
        first = max(today - timedelta(days=lookback_days), partitions.start.date())
        return RunRequest(
            run_key=f"ledger-{today.isoformat()}",
            tags=partition_range_tags(first, today),
        )

    return daily_ledger_sync
