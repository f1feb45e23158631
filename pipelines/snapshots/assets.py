"""Snapshot assets, one per endpoint of the registry.

Append-only history with fetched_at and a content hash; an unchanged snapshot is not stored again.
They write the warehouse, so they are in its pool, and they follow the ledger: fetched after
each ledger sync (pipelines/automation.py), so reconciliation compares the ledger with figures
read after it.
"""

from dagster import AssetExecutionContext, AssetsDefinition, MaterializeResult, asset

from pipelines.automation import after_ledger_sync
from pipelines.dagster_metadata import row_count
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.snapshots.fetch import snapshot
from pipelines.snapshots.registry import SNAPSHOTS, SnapshotEndpoint
from pipelines.warehouse.row_counts import table_rows


def _snapshot_asset(endpoint: SnapshotEndpoint) -> AssetsDefinition:
    @asset(
        name=endpoint.table,
        group_name="snapshots",
        description=f"{endpoint.description} GET {endpoint.path}, history in the table "
        f"{endpoint.table}.",
        kinds={"duckdb", "python"},
        pool=WAREHOUSE_POOL,
        automation_condition=after_ledger_sync(),
    )
    def _asset(
        context: AssetExecutionContext,
        platform_api: PlatformApiResource,
        warehouse: WarehouseResource,
    ) -> MaterializeResult:
        with warehouse.step(context, endpoint.table):
            wh = warehouse.warehouse()
            with platform_api.client() as client:
                result = snapshot(
                    client,
                    wh,
                    endpoint,
                    account=platform_api.account_settings(),
                    run_id=context.run.run_id,
                )
            if result.warning:
                context.log.warning(result.warning)
            if result.stored:  # an unchanged snapshot wrote nothing: the copy is still current
                wh.publish_analyst_copy()
            rows = table_rows(wh.path, [endpoint.table])[endpoint.table]
        return MaterializeResult(metadata={**result.metadata(), **row_count(rows)})

    return _asset


SNAPSHOT_ASSETS: list[AssetsDefinition] = [_snapshot_asset(e) for e in SNAPSHOTS]
