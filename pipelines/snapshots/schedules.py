"""The snapshot job (the daily refresh schedule in pipelines/reports runs the snapshots daily), and
the job of `creditlens sync`: the ledger and the snapshots in one run."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

from pipelines.orchestration.automation import LEDGER
from pipelines.snapshots.assets import SNAPSHOT_ASSETS

snapshot_job = define_asset_job(
    "snapshot_sync",
    selection=AssetSelection.assets(*SNAPSHOT_ASSETS),
    description="Fetch the billing snapshots; store those that changed.",
)

# `creditlens sync`'s run: the ledger's days, its checks, then the snapshots (downstream of the
# ledger) of the accounts it landed. One run, not two: each costs about a second of Dagster's own.
SYNC_JOB = "ledger_and_snapshot_sync"
sync_job = define_asset_job(
    SYNC_JOB,
    selection=AssetSelection.assets(LEDGER, *SNAPSHOT_ASSETS),
    description="Sync a range of UTC days of the ledger (run tags give the range), then fetch "
    "the billing snapshots of the accounts it landed; what `creditlens sync` runs first.",
)
