"""Daily snapshots of the subscription, the summary, the breakdown and the campaigns."""

from __future__ import annotations

from dagster import AssetSelection, ScheduleDefinition, define_asset_job

from pipelines.snapshots.fetch import ENDPOINTS

snapshot_job = define_asset_job(
    "snapshot_sync",
    selection=AssetSelection.assets(*ENDPOINTS),
    description="Fetch the billing snapshots; store those that changed.",
)

daily_snapshots = ScheduleDefinition(
    name="daily_snapshots",
    job=snapshot_job,
    cron_schedule="20 0 * * *",
    execution_timezone="UTC",
    description="Daily at 00:20 UTC.",
)
