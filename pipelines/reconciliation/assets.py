"""Reconciliation assets: balance breaks, daily balances and the enriched ledger.

Downstream of the ledger and the snapshots, requested after each ledger sync in the run of the
snapshots (pipelines/automation.py). Hidden movements and breakdown mismatches are ERROR-severity
asset checks carrying the breaks in their metadata: finance acts on these, so a failing check
must say exactly where and how much. They block: a run stops after a reconciliation that found
findings nobody acknowledged, so the reports are not rebuilt over them and do not look fresh
(`creditlens report` still builds the site, with the findings, on demand).
"""

from collections.abc import Iterator

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    MaterializeResult,
    multi_asset,
)

from pipelines.automation import with_the_refresh
from pipelines.dagster_metadata import row_count
from pipelines.reconciliation.resources import ReconcileResource
from pipelines.reconciliation.run import breaks_records, reconcile_account
from pipelines.reconciliation.summary import (
    BREAKDOWN,
    HIDDEN_MOVEMENTS,
    SUMMARY,
    CheckRecord,
    ReconciliationSummary,
)
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.snapshots.registry import TABLES as SNAPSHOT_TABLES
from pipelines.warehouse.row_counts import table_rows
from transforms.cross_checks import CheckOutcome

UPSTREAM = [AssetKey("ledger_entries"), *(AssetKey(table) for table in SNAPSHOT_TABLES)]
OUTPUTS = ("balance_breaks", "breakdown_mismatches", "daily_balance", "ledger_enriched")


def _cross_check(name: str, outcome: CheckOutcome, unacknowledged: pl.DataFrame) -> CheckRecord:
    """A cross-check against the platform's own figures fails on an unacknowledged break only:
    "unavailable" (no snapshot to compare with) is said in its status and message, not failed,
    and an acknowledged break is known and explained."""
    return CheckRecord(
        name,
        passed=outcome.status != "break" or unacknowledged.height == 0,
        status=outcome.status,
        message=outcome.message,
        breaks=breaks_records(unacknowledged),
    )


@multi_asset(
    name="reconciliation",
    group_name="reconciliation",
    pool=WAREHOUSE_POOL,
    specs=[
        AssetSpec(
            "balance_breaks",
            deps=UPSTREAM,
            automation_condition=with_the_refresh(),
            description="Hidden movements of every placement (view hidden_movements).",
            kinds={"duckdb", "polars"},
        ),
        AssetSpec(
            "breakdown_mismatches",
            deps=UPSTREAM,
            automation_condition=with_the_refresh(),
            description="The current period's breakdown items that differ from the ledger.",
            kinds={"duckdb", "polars"},
        ),
        AssetSpec(
            "daily_balance",
            deps=UPSTREAM,
            automation_condition=with_the_refresh(),
            description="Opening, movements by category, hidden movements, closing per day.",
            kinds={"duckdb", "polars"},
        ),
        AssetSpec(
            "ledger_enriched",
            deps=UPSTREAM,
            automation_condition=with_the_refresh(),
            description="Entries in chain order with plan, status and campaign name as of then.",
            kinds={"duckdb", "polars"},
        ),
    ],
    check_specs=[
        AssetCheckSpec(
            HIDDEN_MOVEMENTS,
            asset="balance_breaks",
            blocking=True,
            description="Every balance change is explained by a ledger entry.",
        ),
        AssetCheckSpec(
            BREAKDOWN,
            asset="balance_breaks",
            blocking=True,
            description="The current period's breakdown equals the ledger's debits.",
        ),
        AssetCheckSpec(
            SUMMARY,
            asset="balance_breaks",
            blocking=True,
            description="The current balance equals the last entry's balanceAfter.",
        ),
    ],
)
def reconciliation(
    context: AssetExecutionContext,
    platform_api: PlatformApiResource,
    warehouse: WarehouseResource,
    reconcile_config: ReconcileResource,
) -> Iterator[MaterializeResult | AssetCheckResult]:
    with warehouse.step(context, "reconciliation"):
        wh = warehouse.warehouse()
        account = platform_api.account
        options = reconcile_config.options(account)
        result = reconcile_account(wh, account, options, context.run.run_id)
        wh.publish_analyst_copy()
        rows = table_rows(wh.path, OUTPUTS)
    summary = ReconciliationSummary.of(result)
    for output in OUTPUTS:
        metadata = summary.metadata() if output == "balance_breaks" else summary.common_metadata()
        yield MaterializeResult(asset_key=output, metadata={**metadata, **row_count(rows[output])})
    movements = result.movements
    open_movements = result.unacknowledged(movements)
    gross, net = result.gross_and_net
    hidden = CheckRecord(
        HIDDEN_MOVEMENTS,
        passed=open_movements.height == 0,
        message=(
            f"{movements.height} hidden movement(s), {open_movements.height} not acknowledged; "
            f"gross {gross}, net {net} (hidden_movements view)"
        ),
        breaks=breaks_records(open_movements),
        hidden_movements=movements.height,
        ambiguous_ties=result.ambiguous_ties,
        net_gap=net,
        gross_gap=gross,
        acknowledged=movements.height - open_movements.height,
    )
    checks = (
        hidden,
        _cross_check(BREAKDOWN, result.breakdown, result.unacknowledged(result.mismatches)),
        _cross_check(
            SUMMARY,
            result.summary,
            result.unacknowledged(movements.filter(movements["kind"] == "summary")),
        ),
    )
    for check in checks:
        yield AssetCheckResult(
            check_name=check.name,
            asset_key="balance_breaks",
            passed=check.passed,
            severity=AssetCheckSeverity.ERROR,
            metadata=check.metadata(),
        )
