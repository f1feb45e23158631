"""Checks on the landed ledger that Dagster records with every materialization.

Both are ERROR checks that block: a run that landed a broken ledger stops there, and the
refresh that follows the ledger (pipelines/automation.py) is not requested over it.
"""

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetKey,
    asset_check,
)

from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.warehouse.read import duplicate_entry_ids, latest_sync_counts

LEDGER = AssetKey("ledger_entries")


@asset_check(
    asset=LEDGER,
    name="fetched_equals_landed_plus_quarantined",
    description="Nothing lost, nothing doubled: each entry fetched is landed or quarantined.",
    blocking=True,
)
def fetched_equals_landed_plus_quarantined(
    context: AssetCheckExecutionContext,
    platform_api: PlatformApiResource,
    warehouse: WarehouseResource,
) -> AssetCheckResult:
    with warehouse.step(context, "fetched_equals_landed_plus_quarantined"):
        counts = latest_sync_counts(warehouse.path, platform_api.account)
    if counts is None:
        return AssetCheckResult(passed=True, metadata={"note": "no sync recorded yet"})
    return AssetCheckResult(
        passed=counts.fetched == counts.landed + counts.quarantined,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "run_id": counts.run_id,
            "fetched": counts.fetched,
            "landed": counts.landed,
            "quarantined": counts.quarantined,
        },
    )


@asset_check(
    asset=LEDGER,
    name="entry_ids_unique",
    description="Each (account, entry_id) appears once: the identity rule holds in the warehouse.",
    blocking=True,
)
def entry_ids_unique(
    context: AssetCheckExecutionContext,
    platform_api: PlatformApiResource,
    warehouse: WarehouseResource,
) -> AssetCheckResult:
    with warehouse.step(context, "entry_ids_unique"):
        duplicates = duplicate_entry_ids(warehouse.path, platform_api.account)
    return AssetCheckResult(
        passed=duplicates == 0,
        severity=AssetCheckSeverity.ERROR,
        metadata={"duplicate_ids": duplicates},
    )
