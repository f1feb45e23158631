"""Checks on the landed ledger that Dagster records with every materialization."""

from dagster import AssetCheckResult, AssetCheckSeverity, AssetKey, asset_check

from pipelines.resources import PlatformApiResource, WarehouseResource

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
    with warehouse.warehouse().read() as con:
        row = con.execute(
            "SELECT run_id, entries_fetched, entries_landed, entries_quarantined FROM sync_runs "
            "WHERE account = ? ORDER BY finished_at DESC LIMIT 1",
            [platform_api.account],
        ).fetchone()
    if row is None:
        return AssetCheckResult(passed=True, metadata={"note": "no sync recorded yet"})
    run_id, fetched, landed, quarantined = row
    return AssetCheckResult(
        passed=fetched == landed + quarantined,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "run_id": run_id,
            "fetched": fetched,
            "landed": landed,
            "quarantined": quarantined,
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
    with warehouse.warehouse().read() as con:
        row = con.execute(
            "SELECT count(*) - count(DISTINCT entry_id) FROM ledger_entries WHERE account = ?",
            [platform_api.account],
        ).fetchone()
    duplicates = int(row[0]) if row else 0
    return AssetCheckResult(
        passed=duplicates == 0,
        severity=AssetCheckSeverity.ERROR,
        metadata={"duplicate_ids": duplicates},
    )
