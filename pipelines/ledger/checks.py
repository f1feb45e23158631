"""Checks on the landed ledger that Dagster records with every materialization, per account.

Both are ERROR checks that block: a run that landed a broken ledger stops there, and the
refresh that follows the ledger (pipelines/automation.py) is not requested over it. Each account
has its own result (pipelines/account_checks.py), read for all of them in one connection.
"""

from collections.abc import Iterator

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    multi_asset_check,
)

from pipelines.account_checks import check_names
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.settings import Settings
from pipelines.warehouse.read import duplicate_entry_ids_of, latest_sync_counts_of

LEDGER = AssetKey("ledger_entries")
FETCHED = "fetched_equals_landed_plus_quarantined"
UNIQUE = "entry_ids_unique"
DESCRIPTIONS = {
    FETCHED: "Nothing lost, nothing doubled: each entry fetched is landed or quarantined.",
    UNIQUE: "Each (account, entry_id) appears once: the identity rule holds in the warehouse.",
}


def build_ledger_checks(settings: Settings) -> AssetChecksDefinition:
    names = {base: check_names(base, settings) for base in DESCRIPTIONS}

    @multi_asset_check(
        name="ledger_checks",
        specs=[
            AssetCheckSpec(
                name,
                asset=LEDGER,
                blocking=True,
                description=f"{DESCRIPTIONS[base]} (account {account})",
            )
            for base, per_account in names.items()
            for account, name in per_account.items()
        ],
    )
    def ledger_checks(
        context: AssetCheckExecutionContext,
        platform_api: PlatformApiResource,
        warehouse: WarehouseResource,
    ) -> Iterator[AssetCheckResult]:
        accounts = [a.name for a in platform_api.accounts()]
        with warehouse.step(context, "ledger_checks"):
            counts = latest_sync_counts_of(warehouse.path, accounts)
            duplicates = duplicate_entry_ids_of(warehouse.path, accounts)
        for account in accounts:
            synced = counts.get(account)
            if synced is None:
                yield AssetCheckResult(
                    check_name=names[FETCHED][account],
                    asset_key=LEDGER,
                    passed=True,
                    metadata={"account": account, "note": "no sync recorded yet"},
                )
            else:
                yield AssetCheckResult(
                    check_name=names[FETCHED][account],
                    asset_key=LEDGER,
                    passed=synced.fetched == synced.landed + synced.quarantined,
                    severity=AssetCheckSeverity.ERROR,
                    metadata={
                        "account": account,
                        "run_id": synced.run_id,
                        "fetched": synced.fetched,
                        "landed": synced.landed,
                        "quarantined": synced.quarantined,
                    },
                )
            yield AssetCheckResult(
                check_name=names[UNIQUE][account],
                asset_key=LEDGER,
                passed=duplicates[account] == 0,
                severity=AssetCheckSeverity.ERROR,
                metadata={"account": account, "duplicate_ids": duplicates[account]},
            )

    return ledger_checks
