"""The reconciliation job; the daily refresh schedule runs it after the snapshots."""

from dagster import AssetSelection, define_asset_job

from pipelines.reconciliation.assets import GROUP

reconciliation_job = define_asset_job(
    "reconciliation_run",
    selection=AssetSelection.groups(GROUP),  # each account's outputs, or the plain ones
    description="Reconcile the landed ledger against itself and the snapshots.",
)
