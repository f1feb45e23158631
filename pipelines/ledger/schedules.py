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
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from pipelines.orchestration.schedules import SCHEDULE_TIMEZONE


def build_ledger_job() -> UnresolvedAssetJobDefinition:
    """The job takes the ledger asset's partitions; a run's tags give the range of days."""
    return define_asset_job(
        "ledger_sync",
        selection=AssetSelection.assets("ledger_entries"),
        description="Sync a range of UTC days of the ledger (run tags give the range).",
    )


def build_ledger_schedule(
    job: UnresolvedAssetJobDefinition, partitions: DailyPartitionsDefinition, lookback_days: int
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
            tags={
                ASSET_PARTITION_RANGE_START_TAG: first.isoformat(),
                ASSET_PARTITION_RANGE_END_TAG: today.isoformat(),
            },
        )

    return daily_ledger_sync
