"""The ledger asset: whole UTC days of the credit ledger, landed exactly once.

Single-run backfill policy: a backfill over any range is one run that reads it in windows of at
most 366 days, not one run (and one API window) per day.

Metadata is honest per partition: each day's materialization carries that day's own counts, read
back from the warehouse (entries landed and quarantined, ``dagster/row_count``), so summing the
partitions gives the truth. The run's totals (range, windows, pages, requests, time, the wait for
the lock) are recorded once, as an observation of the asset; a backfill of a month used to repeat
them on each of its 31 days.
"""

from datetime import date

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetObservation,
    AssetsDefinition,
    BackfillPolicy,
    DailyPartitionsDefinition,
    FreshnessPolicy,
    MaterializeResult,
    MetadataValue,
    asset,
)

from pipelines import progress
from pipelines.dagster_metadata import row_count
from pipelines.ledger.sync import LedgerSyncResult, sync_ledger
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.warehouse.row_counts import DayRows, ledger_days

LEDGER = AssetKey("ledger_entries")


def run_totals(result: LedgerSyncResult) -> dict[str, object]:
    """What the whole run did, recorded once: ``LedgerSyncResult.from_metadata`` reads it."""
    metadata: dict[str, object] = dict(result.metadata())
    metadata["invariant"] = MetadataValue.text(
        f"fetched {result.fetched} = landed {result.landed} + quarantined {result.quarantined}"
    )
    return metadata


def day_metadata(day: DayRows) -> dict[str, int]:
    """One partition's own figures, under the names of the run's totals, so they add up."""
    return {
        "entries_landed": day.entries,
        "entries_quarantined": day.quarantined,
        **row_count(day.entries),
    }


def build_ledger_asset(
    partitions: DailyPartitionsDefinition, freshness: FreshnessPolicy
) -> AssetsDefinition:
    @asset(
        name="ledger_entries",
        group_name="ledger",
        partitions_def=partitions,
        backfill_policy=BackfillPolicy.single_run(),
        pool=WAREHOUSE_POOL,
        freshness_policy=freshness,
        description=(
            "The credit ledger (GET /Consumption/transactions), one row per entry in the "
            "DuckDB table ledger_entries; each run replaces exactly the UTC days it covers. "
            "Each day's materialization carries that day's counts; the run's totals are its "
            "observation."
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
        with warehouse.step(context, "ledger_entries"):
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
            days = ledger_days(warehouse.path, platform_api.account, first, last)
        progress.report("ledger.done", result=result)
        context.log.info(result.summary())
        context.log_event(AssetObservation(asset_key=LEDGER, metadata=run_totals(result)))
        for key in context.partition_keys:
            context.add_asset_metadata(
                day_metadata(days.get(date.fromisoformat(key), DayRows())), partition_key=key
            )
        return MaterializeResult()

    return ledger_entries
