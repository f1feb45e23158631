"""The snapshot job (the daily refresh schedule in pipelines/reports runs the snapshots daily)."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

from pipelines.snapshots.assets import SNAPSHOT_ASSETS

snapshot_job = define_asset_job(
    "snapshot_sync",
    selection=AssetSelection.assets(*SNAPSHOT_ASSETS),
    description="Fetch the billing snapshots; store those that changed.",
)
