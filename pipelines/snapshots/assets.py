"""Snapshot assets: subscription, consumption summary, breakdown and campaigns.

Append-only history with fetched_at and a content hash; an unchanged snapshot is not stored again.
"""

from dagster import AssetExecutionContext, AssetsDefinition, MaterializeResult, asset

from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.snapshots.fetch import ENDPOINTS, snapshot

DESCRIPTIONS = {
    "subscription_snapshots": "The subscription contract (plan, status, features, limits).",
    "consumption_snapshots": "The credit balance summary: balance, usage, billing period.",
    "breakdown_snapshots": "Consumption of the current period per agent, campaign and channel.",
    "campaigns": "Campaign ids and names.",
}


def _snapshot_asset(table: str) -> AssetsDefinition:
    @asset(
        name=table,
        group_name="snapshots",
        description=f"{DESCRIPTIONS[table]} GET {ENDPOINTS[table]}, history in the table {table}.",
        kinds={"duckdb", "python"},
    )
    def _asset(
        context: AssetExecutionContext,
        platform_api: PlatformApiResource,
        warehouse: WarehouseResource,
    ) -> MaterializeResult:
        wh = warehouse.warehouse()
        with platform_api.client() as client:
            rows, stored = snapshot(
                client,
                wh,
                table,
                account=platform_api.account,
                run_id=context.run.run_id,
                fields=platform_api.snapshot_fields(),
                balance_field=platform_api.summary_balance_field,
            )
        if rows.warning:
            context.log.warning(rows.warning)
        if stored:  # an unchanged snapshot wrote nothing: the analyst copy is still current
            wh.publish_analyst_copy()
        return MaterializeResult(
            metadata={
                "account": platform_api.account,
                "stored": stored,
                "content_hash": rows.content_hash,
                "rows": len(rows.rows),
                "shape_ok": rows.shape_ok,
                **rows.meta,
            }
        )

    return _asset


SNAPSHOT_ASSETS = [_snapshot_asset(table) for table in ENDPOINTS]
