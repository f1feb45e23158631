"""The ``statement_closes`` asset (named, as every asset here, by the table it writes): one
partition per UTC month, materialized when the month is closed or restated, for every account
at once.

A partition's run checks its own month (from the UI: close or restate that month; sending a
closed month again is `creditlens close --month`); the close job (definitions.py) checks every
month after each reconciliation and daily, and records a materialization of each month it
closed or restated, so the asset's partitions show which months are closed and when they last
changed.
"""

from datetime import date

from dagster import (
    AssetExecutionContext,
    AssetMaterialization,
    AssetsDefinition,
    MaterializeResult,
    MonthlyPartitionsDefinition,
    asset,
)

from pipelines.config.settings import Settings
from pipelines.ledger.partitions import ledger_start_day
from pipelines.resources.warehouse import WAREHOUSE_POOL, WarehouseResource
from pipelines.statements.close import CloseResult
from pipelines.statements.delivery import CheckOutcome, close_and_deliver

ASSET = "statement_closes"  # the asset is the table it writes, as every asset here
MONTH_FORMAT = "%Y-%m"


def month_partitions(settings: Settings) -> MonthlyPartitionsDefinition:
    """From the month the ledger's partitions start in, through the last whole month."""
    start = ledger_start_day(settings).replace(day=1)
    return MonthlyPartitionsDefinition(
        start_date=start.strftime(MONTH_FORMAT), timezone="UTC", fmt=MONTH_FORMAT, end_offset=0
    )


def partition_key(month: date) -> str:
    return month.strftime(MONTH_FORMAT)


def month_of(key: str) -> date:
    return date.fromisoformat(f"{key}-01")


def metadata(result: CloseResult, month: date | None = None) -> dict[str, object]:
    """What a run closed and restated (of ``month`` only when given), by account."""
    closed = [s for s in result.issued if month is None or s.month == month]
    restated = [r.current for r in result.restated if month is None or r.current.month == month]
    versions = [*closed, *restated]
    return {
        "closed": ", ".join(f"{s.account} {s.month:%Y-%m}" for s in closed) or "none",
        "closings": ", ".join(f"{s.account} v{s.version} {s.line('closing')}" for s in versions)
        or "none",
        "restated": ", ".join(f"{s.account} {s.month:%Y-%m} v{s.version}" for s in restated)
        or "none",
        **({"not closed": "\n".join(result.refused)} if result.refused else {}),
    }


def materializations(outcome: CheckOutcome) -> list[AssetMaterialization]:
    """One per month the check closed or restated, for the month's partition."""
    result = outcome.result
    months = sorted({s.month for s in result.issued} | {r.current.month for r in result.restated})
    return [
        AssetMaterialization(
            asset_key=ASSET, partition=partition_key(m), metadata=metadata(result, m)
        )
        for m in months
    ]


def build_asset(settings: Settings) -> AssetsDefinition:
    @asset(
        name=ASSET,
        group_name="statements",
        pool=WAREHOUSE_POOL,
        partitions_def=month_partitions(settings),
        description="Each account's monthly statement, closed once a sync covered the month's "
        "last day plus close_after_days, restated when its figures change, and sent to finance "
        "(docs/statements.md).",
    )
    def statements(
        context: AssetExecutionContext, warehouse: WarehouseResource
    ) -> MaterializeResult:
        month = month_of(context.partition_key)
        with warehouse.step(context, "statements"):
            outcome = close_and_deliver(warehouse.warehouse(), settings, month)
        context.log.info(f"statements: {outcome.result.checked or 'nothing to check'}")
        for line in [*outcome.result.lines(), *outcome.queued] or [
            f"statements: nothing to close or restate in {month:%Y-%m}"
        ]:
            context.log.info(line)
        for line in outcome.warnings:
            context.log.warning(line)
        return MaterializeResult(metadata=metadata(outcome.result, month))

    return statements
