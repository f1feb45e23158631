"""Reconciliation assets: balance breaks, daily balances and the enriched ledger.

Downstream of the ledger and the snapshots. Hidden movements and breakdown mismatches are
ERROR-severity asset checks carrying the breaks in their metadata: finance acts on these, so a
failing check must say exactly where and how much.
"""

from decimal import Decimal

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    ConfigurableResource,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)
from pydantic import Field

from pipelines.reconciliation.run import ReconcileOptions, breaks_records, reconcile_account
from pipelines.reconciliation.slices import SLICE_ENTRIES
from pipelines.resources import PlatformApiResource, WarehouseResource

UPSTREAM = [
    AssetKey("ledger_entries"),
    AssetKey("consumption_snapshots"),
    AssetKey("breakdown_snapshots"),
    AssetKey("subscription_snapshots"),
    AssetKey("campaigns"),
]


class ReconcileResource(ConfigurableResource):
    sign_convention: str = Field(default="signed", description="signed, unsigned or infer.")
    tolerance: str = Field(default="0", description="Largest gap treated as continuous.")
    debit_type_pattern: str = Field(default="", description="Regex of debit types (unsigned).")
    slice_entries: int = Field(
        default=SLICE_ENTRIES,
        description="Entries reconciled at a time (whole UTC days); memory grows with it, not "
        "with the ledger. 0: the whole ledger at once.",
    )

    def options(self) -> ReconcileOptions:
        return ReconcileOptions(
            sign_convention=self.sign_convention,
            tolerance=Decimal(self.tolerance),
            debit_type_pattern=self.debit_type_pattern or None,
            slice_entries=self.slice_entries or None,
        )


@multi_asset(
    name="reconciliation",
    group_name="reconciliation",
    specs=[
        AssetSpec(
            "balance_breaks",
            deps=UPSTREAM,
            description="Hidden movements, summary and breakdown mismatches.",
            kinds={"duckdb", "polars"},
        ),
        AssetSpec(
            "daily_balance",
            deps=UPSTREAM,
            description="Opening, movements by category, hidden movements, closing per day.",
            kinds={"duckdb", "polars"},
        ),
        AssetSpec(
            "ledger_enriched",
            deps=UPSTREAM,
            description="Entries in chain order with plan, status and campaign name as of then.",
            kinds={"duckdb", "polars"},
        ),
    ],
    check_specs=[
        AssetCheckSpec(
            "no_hidden_movements",
            asset="balance_breaks",
            description="Every balance change is explained by a ledger entry.",
        ),
        AssetCheckSpec(
            "breakdown_matches_ledger",
            asset="balance_breaks",
            description="The current period's breakdown equals the ledger's debits.",
        ),
        AssetCheckSpec(
            "summary_matches_ledger",
            asset="balance_breaks",
            description="The current balance equals the last entry's balanceAfter.",
        ),
    ],
)
def reconciliation(
    context: AssetExecutionContext,
    platform_api: PlatformApiResource,
    warehouse: WarehouseResource,
    reconcile_config: ReconcileResource,
):
    wh = warehouse.warehouse()
    result = reconcile_account(
        wh, platform_api.account, reconcile_config.options(), context.run.run_id
    )
    wh.publish_analyst_copy()
    counts = result.counts()
    common = {
        "account": result.account,
        "entries": result.entries,
        "sign_convention": result.convention + (" (inferred)" if result.inferred else ""),
        "tolerance": str(result.tolerance),
    }
    yield MaterializeResult(
        asset_key="balance_breaks",
        metadata={**common, **{f"breaks_{k}": v for k, v in counts.items()}},
    )
    yield MaterializeResult(asset_key="daily_balance", metadata=common)
    yield MaterializeResult(asset_key="ledger_enriched", metadata=common)
    continuity = result.continuity_breaks
    yield AssetCheckResult(
        check_name="no_hidden_movements",
        asset_key="balance_breaks",
        passed=continuity.height == 0,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "hidden_movements": continuity.height,
            "ambiguous_ties": result.ambiguous_ties,
            "net_gap": str(sum(continuity["gap"].to_list(), Decimal(0))),
            "breaks": MetadataValue.json(breaks_records(continuity)),
        },
    )
    breakdown = result.breakdown
    yield AssetCheckResult(
        check_name="breakdown_matches_ledger",
        asset_key="balance_breaks",
        passed=breakdown.status != "break",
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "status": breakdown.status,
            "message": breakdown.message,
            "breaks": MetadataValue.json(breaks_records(breakdown.breaks)),
        },
    )
    summary = result.summary
    yield AssetCheckResult(
        check_name="summary_matches_ledger",
        asset_key="balance_breaks",
        passed=summary.status != "break",
        severity=AssetCheckSeverity.ERROR,
        metadata={"status": summary.status, "message": summary.message},
    )
