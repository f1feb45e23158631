"""Checks on the landed ledger that Dagster records with every materialization."""

from dagster import AssetCheckResult, AssetCheckSeverity, AssetKey, asset_check

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
    platform_api: PlatformApiResource, warehouse: WarehouseResource
) -> AssetCheckResult:
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
)
def entry_ids_unique(
    platform_api: PlatformApiResource, warehouse: WarehouseResource
) -> AssetCheckResult:
    duplicates = duplicate_entry_ids(warehouse.path, platform_api.account)
    return AssetCheckResult(
        passed=duplicates == 0,
        severity=AssetCheckSeverity.ERROR,
        metadata={"duplicate_ids": duplicates},
    )
