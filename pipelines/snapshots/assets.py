"""Snapshot assets, one per endpoint of the registry.

Append-only history with fetched_at and a content hash; an unchanged snapshot is not stored again.
"""

from dagster import AssetExecutionContext, AssetsDefinition, MaterializeResult, asset

from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.snapshots.fetch import snapshot
from pipelines.snapshots.registry import SNAPSHOTS, SnapshotEndpoint


def _snapshot_asset(endpoint: SnapshotEndpoint) -> AssetsDefinition:
    @asset(
        name=endpoint.table,
        group_name="snapshots",
        description=f"{endpoint.description} GET {endpoint.path}, history in the table "
        f"{endpoint.table}.",
        kinds={"duckdb", "python"},
    )
    def _asset(
        context: AssetExecutionContext,
        platform_api: PlatformApiResource,
        warehouse: WarehouseResource,
    ) -> MaterializeResult:
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
        if result.stored:  # an unchanged snapshot wrote nothing: the analyst copy is still current
            wh.publish_analyst_copy()
        return MaterializeResult(metadata=result.metadata())

    return _asset


SNAPSHOT_ASSETS: list[AssetsDefinition] = [_snapshot_asset(e) for e in SNAPSHOTS]
