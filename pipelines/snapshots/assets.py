"""Snapshot assets, one per endpoint of the registry.

Append-only history with fetched_at and a content hash; an unchanged snapshot is not stored again.
Every configured account is fetched by the same step, several at once; one account failing is
logged and observed as its own, and the others are stored.
They write the warehouse, so they are in its pool, and they follow the ledger: fetched after
each ledger sync (pipelines/orchestration/automation.py), so reconciliation compares the ledger
with figures read after it.
"""

from dagster import (
    AssetExecutionContext,
    AssetObservation,
    AssetsDefinition,
    MaterializeResult,
    asset,
)

from pipelines.config.account import AccountSettings
from pipelines.orchestration.account_checks import named_per_account
from pipelines.orchestration.account_work import OneWriter, at_least_one, failures, for_each_account
from pipelines.orchestration.automation import after_ledger_sync
from pipelines.orchestration.metadata import row_count
from pipelines.orchestration.sync_outcomes import record_step
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.snapshots.fetch import SnapshotResult, snapshot
from pipelines.snapshots.registry import SNAPSHOTS, SnapshotEndpoint
from pipelines.warehouse.row_counts import table_rows


def _snapshot_asset(endpoint: SnapshotEndpoint) -> AssetsDefinition:
    @asset(
        name=endpoint.table,
        group_name="snapshots",
        description=f"{endpoint.description} GET {endpoint.path} of every configured account, "
        f"history in the table {endpoint.table}.",
        kinds={"duckdb", "python"},
        pool=WAREHOUSE_POOL,
        automation_condition=after_ledger_sync(),
    )
    def _asset(
        context: AssetExecutionContext,
        platform_api: PlatformApiResource,
        warehouse: WarehouseResource,
    ) -> MaterializeResult:
        accounts = platform_api.accounts()
        with warehouse.step(context, endpoint.table):
            wh = warehouse.warehouse()
            writer = OneWriter()

            def fetch(account: AccountSettings) -> SnapshotResult:
                with platform_api.client(account) as client:
                    return snapshot(
                        client,
                        wh,
                        endpoint,
                        account=account,
                        run_id=context.run.run_id,
                        turn=writer.turn,
                    )

            outcomes = for_each_account(
                accounts,
                fetch,
                step=endpoint.table,
                concurrency=platform_api.settings().account_concurrency,
            )
            for failure in failures(outcomes):
                context.log.error(failure.line())
                context.log_event(
                    AssetObservation(asset_key=context.asset_key, metadata=failure.metadata())
                )
            record_step(
                wh, "snapshots", outcomes, tags=context.run.tags, run_id=context.run.run_id,
                part=endpoint.table,
            )  # fmt: skip
            done = at_least_one(outcomes, per_account=named_per_account(platform_api.settings()))
            for _, result in done:
                if result.warning:
                    context.log.warning(f"{result.account}: {result.warning}")
            if any(result.stored for _, result in done):  # else the copy is still current
                wh.publish_analyst_copy()
            rows = table_rows(wh.path, [endpoint.table], lock_timeout_s=wh.lock_timeout_s)[
                endpoint.table
            ]
        if len(outcomes) == 1:
            return MaterializeResult(metadata={**done[0][1].metadata(), **row_count(rows)})
        for _, result in done:
            context.log_event(
                AssetObservation(asset_key=context.asset_key, metadata=result.metadata())
            )
        stored = sum(1 for _, result in done if result.stored)
        return MaterializeResult(
            metadata={
                "accounts": len(done),
                "accounts_stored": stored,
                "accounts_unchanged": len(done) - stored,
                "accounts_failed": len(outcomes) - len(done),
                **row_count(rows),
            }
        )

    return _asset


SNAPSHOT_ASSETS: list[AssetsDefinition] = [_snapshot_asset(e) for e in SNAPSHOTS]
