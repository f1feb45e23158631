"""The ledger asset: whole UTC days of the credit ledger, landed exactly once.

Single-run backfill policy: a backfill over any range is one run that reads it in windows of at
most 366 days, not one run (and one API window) per day.
"""

from datetime import date

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    BackfillPolicy,
    DailyPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)

from pipelines import progress
from pipelines.ledger.sync import sync_ledger
from pipelines.resources import PlatformApiResource, WarehouseResource


def build_ledger_asset(partitions: DailyPartitionsDefinition) -> AssetsDefinition:
    @asset(
        name="ledger_entries",
        group_name="ledger",
        partitions_def=partitions,
        backfill_policy=BackfillPolicy.single_run(),
        description=(
            "The credit ledger (GET /Consumption/transactions), one row per entry in the "
            "DuckDB table ledger_entries; each run replaces exactly the UTC days it covers."
        ),
        kinds={"duckdb", "python"},
    )
    def ledger_entries(
        context: AssetExecutionContext,
        platform_api: PlatformApiResource,
        warehouse: WarehouseResource,
    ) -> MaterializeResult:
        key_range = context.partition_key_range
        first = date.fromisoformat(key_range.start)
        last = date.fromisoformat(key_range.end)
        progress.report("ledger.start", first=first, last=last)
        with platform_api.client() as client:
            result = sync_ledger(
                client,
                warehouse.warehouse(),
                account=platform_api.account,
                first=first,
                last=last,
                run_id=context.run.run_id,
                staging_root=warehouse.staging_root(),
                on_page=lambda page: progress.report(
                    "ledger.page", entries=page.count, window=str(page.window)
                ),
            )
        progress.report("ledger.done", result=result)
        context.log.info(result.summary())
        metadata = result.metadata()
        metadata["invariant"] = MetadataValue.text(
            f"fetched {result.fetched} = landed {result.landed} + quarantined {result.quarantined}"
        )
        return MaterializeResult(metadata=metadata)

    return ledger_entries
