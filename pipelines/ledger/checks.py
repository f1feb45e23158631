"""Checks on the landed ledger that Dagster records with every materialization.

The two invariants are ERROR checks that block: a run that landed a broken ledger stops there,
and the refresh that follows the ledger (pipelines/orchestration/automation.py) is not requested
over it.

They are checked for every account, in one connection, and each names the accounts that broke
it, with every account's figures in its metadata; they are not one check per account, unlike the
reconciliation's. Dagster plans a check of a partitioned asset once per partition of the run: a
check per account on the ledger made 50 accounts x 3 checks x 730 days = 110,000 planned rows
(256 MB of Dagster's index, 62 s before the first request) for one two-year backfill.
"""

from collections.abc import Iterator
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    multi_asset_check,
)

from pipelines.config.settings import Settings
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.warehouse.read import SyncCounts, ledger_invariants_of

LEDGER = AssetKey("ledger_entries")
FETCHED = "fetched_equals_landed_plus_quarantined"
UNIQUE = "entry_ids_unique"
DESCRIPTIONS = {
    FETCHED: "Nothing lost, nothing doubled: for every account, each entry fetched is landed or "
    "quarantined.",
    UNIQUE: "Each (account, entry_id) appears once: the identity rule holds in the warehouse.",
}


def build_ledger_checks(settings: Settings) -> AssetChecksDefinition:
    specs = [AssetCheckSpec(n, asset=LEDGER, blocking=True, description=d) for n, d in
             DESCRIPTIONS.items()]  # fmt: skip

    @multi_asset_check(name="ledger_checks", specs=specs)
    def ledger_checks(
        context: AssetCheckExecutionContext,
        platform_api: PlatformApiResource,
        warehouse: WarehouseResource,
    ) -> Iterator[AssetCheckResult]:
        accounts = [a.name for a in platform_api.accounts()]
        with warehouse.step(context, "ledger_checks"):
            counts, duplicates = ledger_invariants_of(
                warehouse.path, accounts, lock_timeout_s=warehouse.lock_timeout_s
            )
        yield _invariant(accounts, counts)
        broken = sorted(a for a in accounts if duplicates[a])
        yield AssetCheckResult(
            check_name=UNIQUE,
            asset_key=LEDGER,
            passed=not broken,
            severity=AssetCheckSeverity.ERROR,
            description=f"repeated entry ids in {', '.join(broken)}" if broken else None,
            metadata={"duplicate_ids": sum(duplicates.values()), **_by_account(duplicates)},
        )

    return ledger_checks


def _by_account(values: dict[str, Any]) -> dict[str, Any]:
    """Each account's figure under its own key, so the UI lists them."""
    return {f"account {account}": value for account, value in sorted(values.items())}


def _invariant(accounts: list[str], counts: dict[str, SyncCounts]) -> AssetCheckResult:
    broken = sorted(a for a, c in counts.items() if c.fetched != c.landed + c.quarantined)
    if len(accounts) == 1:  # as it always read: the one account's figures
        only = counts.get(accounts[0])
        if only is None:
            return AssetCheckResult(
                check_name=FETCHED, passed=True, metadata={"note": "no sync recorded yet"}
            )
        return AssetCheckResult(
            check_name=FETCHED,
            asset_key=LEDGER,
            passed=not broken,
            severity=AssetCheckSeverity.ERROR,
            description=(
                f"fetched {only.fetched} != landed {only.landed} + quarantined {only.quarantined}"
                if broken
                else None
            ),
            metadata={
                "run_id": only.run_id,
                "fetched": only.fetched,
                "landed": only.landed,
                "quarantined": only.quarantined,
            },
        )
    figures = {
        a: f"fetched {c.fetched} = landed {c.landed} + quarantined {c.quarantined}"
        + ("" if a not in broken else " BROKEN")
        for a, c in counts.items()
    }
    return AssetCheckResult(
        check_name=FETCHED,
        asset_key=LEDGER,
        passed=not broken,
        severity=AssetCheckSeverity.ERROR,
        description=f"fetched != landed + quarantined in {', '.join(broken)}" if broken else None,
        metadata={
            "accounts": len(accounts),
            "accounts_never_synced": len(accounts) - len(counts),
            **_by_account(figures),
        },
    )
