"""The snapshot assets, one per endpoint of the registry, computed by one step.

Append-only history with fetched_at and a content hash; an unchanged snapshot is not stored again.
Every configured account is fetched by the same step, several at once, every kind of snapshot of
each; then all of them are stored in ONE transaction (pipelines/warehouse/one_commit.py), not one
per account and kind (200 for 50 accounts). One account failing is logged and observed as its
own, under the asset of the snapshot that failed, and the others are stored.
They write the warehouse, so they are in its pool, and they follow the ledger: downstream of it
(a run of both fetches them after the ledger landed, and skips the accounts whose ledger failed in
that sync) and fetched after each ledger sync (pipelines/orchestration/automation.py), so
reconciliation compares the ledger with figures read after it.
"""

from collections.abc import Callable, Iterator, Mapping, Sequence

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetObservation,
    AssetsDefinition,
    AssetSpec,
    MaterializeResult,
    multi_asset,
)

from pipelines.config.account import AccountSettings
from pipelines.orchestration.account_work import (
    AccountFailure,
    AccountOutcome,
    at_least_one,
    failures,
    for_each_account,
    named_per_account,
    settle,
    succeeded,
)
from pipelines.orchestration.automation import LEDGER, after_ledger_sync
from pipelines.orchestration.metadata import account_records, row_count
from pipelines.orchestration.sync_outcomes import record_parts, sync_id_of
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.snapshots.fetch import FetchedSnapshot, SnapshotResult, fetch_snapshot
from pipelines.snapshots.registry import SNAPSHOTS, SnapshotEndpoint
from pipelines.warehouse.outcomes import outcomes_of_sync
from pipelines.warehouse.row_counts import table_rows
from pipelines.warehouse.writer import Warehouse

Fetched = dict[str, FetchedSnapshot | BaseException]  # one account's, by table
Settled = dict[str, SnapshotResult | BaseException]  # one table's, by account


def _spec(endpoint: SnapshotEndpoint) -> AssetSpec:
    return AssetSpec(
        endpoint.table,
        group_name="snapshots",
        description=f"{endpoint.description} GET {endpoint.path} of every configured account, "
        f"history in the table {endpoint.table}.",
        kinds={"duckdb", "python"},
        automation_condition=after_ledger_sync(),
        deps=[LEDGER],
    )


def _by_endpoint(
    fetched: Sequence[AccountOutcome[Fetched]], endpoint: SnapshotEndpoint
) -> list[AccountOutcome[FetchedSnapshot]]:
    """One endpoint's outcome per account: an account whose client failed fails every kind."""
    out: list[AccountOutcome[FetchedSnapshot]] = []
    for o in fetched:
        got = o.exception if o.result is None else o.result[endpoint.table]
        if isinstance(got, FetchedSnapshot):
            out.append(AccountOutcome(o.account, result=got))
        elif got is not None:
            failure = AccountFailure.of(o.account.name, endpoint.table, got)
            out.append(AccountOutcome(o.account, failure=failure, exception=got))
    return out


def _store_all(
    wh: Warehouse, per_endpoint: Mapping[str, list[AccountOutcome[FetchedSnapshot]]]
) -> dict[str, list[AccountOutcome[SnapshotResult]]]:
    """Every fetched snapshot in one transaction; per endpoint, each account's outcome."""
    ready = [o.result for outcomes in per_endpoint.values() for o in outcomes if o.result]
    try:
        stored = wh.land_snapshots([f.landing() for f in ready]) if ready else {}
    except Exception as exc:  # the lock, the disk: every account's, each with its line
        stored = {(f.table, f.account): exc for f in ready}

    def looked_up(table: str) -> Callable[[list[FetchedSnapshot]], Settled]:
        def commit(done: list[FetchedSnapshot]) -> Settled:
            out: Settled = {}
            for f in done:
                got = stored[(table, f.account)]
                out[f.account] = got if isinstance(got, BaseException) else f.result(got)
            return out

        return commit

    return {
        table: settle(outcomes, looked_up(table), step=table)
        for table, outcomes in per_endpoint.items()
    }


def _ledger_failed(warehouse: WarehouseResource, context: AssetExecutionContext) -> set[str]:
    """Accounts whose ledger failed in this sync: their snapshots wait for a sync that lands."""
    recorded = outcomes_of_sync(
        warehouse.path,
        sync_id_of(context.run.tags, context.run.run_id),
        lock_timeout_s=warehouse.lock_timeout_s,
    )
    return {o.account for o in recorded if o.step == "ledger" and o.result == "failed"}


@multi_asset(
    name="snapshots",
    specs=[_spec(e) for e in SNAPSHOTS],
    can_subset=True,
    pool=WAREHOUSE_POOL,
)
def snapshots(
    context: AssetExecutionContext,
    platform_api: PlatformApiResource,
    warehouse: WarehouseResource,
) -> Iterator[MaterializeResult]:
    selected = [e for e in SNAPSHOTS if AssetKey(e.table) in context.selected_asset_keys]
    per_account = named_per_account(platform_api.settings())
    results: list[MaterializeResult] = []
    with warehouse.step(context, "snapshots"):
        wh = warehouse.warehouse()
        skipped = _ledger_failed(warehouse, context)
        accounts = [a for a in platform_api.accounts() if a.name not in skipped]

        def fetch(account: AccountSettings) -> Fetched:
            got: Fetched = {}
            with platform_api.client(account) as client:
                for endpoint in selected:
                    try:
                        got[endpoint.table] = fetch_snapshot(
                            client, endpoint, account=account, run_id=context.run.run_id
                        )
                    except Exception as exc:  # this kind's failure; the others are stored
                        got[endpoint.table] = exc
            return got

        fetched = for_each_account(
            accounts,
            fetch,
            step="snapshots",
            concurrency=platform_api.settings().account_concurrency,
        )
        outcomes = _store_all(wh, {e.table: _by_endpoint(fetched, e) for e in selected})
        if any(r.stored for o in outcomes.values() for _, r in succeeded(o)):
            wh.publish_analyst_copy()  # else the copy is still current
        for endpoint in selected:
            these = outcomes[endpoint.table]
            key = AssetKey(endpoint.table)
            failed = failures(these)
            for failure in failed:
                context.log.error(failure.line())
            if failed:  # every failed account's line in one event
                records = account_records(f.metadata() for f in failed)
                context.log_event(AssetObservation(asset_key=key, metadata=records))
        record_parts(
            wh, "snapshots", {e.table: outcomes[e.table] for e in selected},
            tags=context.run.tags, run_id=context.run.run_id,
        )  # fmt: skip
        # A kind no account stored fails the step, once the others are materialized.
        pending = [e for e in selected if outcomes[e.table] and not succeeded(outcomes[e.table])]
        done = [e for e in selected if e not in pending]
        if done:
            rows = table_rows(wh.path, [e.table for e in done], lock_timeout_s=wh.lock_timeout_s)
            results = [_materialized(context, e, outcomes[e.table], rows[e.table]) for e in done]
    yield from results
    for endpoint in pending:
        with warehouse.step(context, "snapshots"):
            at_least_one(outcomes[endpoint.table], per_account=per_account)


def _materialized(
    context: AssetExecutionContext,
    endpoint: SnapshotEndpoint,
    outcomes: Sequence[AccountOutcome[SnapshotResult]],
    rows: int,
) -> MaterializeResult:
    """One kind's materialization: a lone account's figures on it, as always; with several,
    each account's as an observation and the counts of accounts on it."""
    key = AssetKey(endpoint.table)
    done = succeeded(outcomes)
    for _, result in done:
        if result.warning:
            context.log.warning(f"{result.account}: {result.warning}")
    if len(outcomes) == 1:
        metadata = {**done[0][1].metadata(), **row_count(rows)}
        return MaterializeResult(asset_key=key, metadata=metadata)
    records = account_records(result.metadata() for _, result in done)
    context.log_event(AssetObservation(asset_key=key, metadata=records))
    stored = sum(1 for _, result in done if result.stored)
    return MaterializeResult(
        asset_key=key,
        metadata={
            "accounts": len(done),
            "accounts_stored": stored,
            "accounts_unchanged": len(done) - stored,
            "accounts_failed": len(outcomes) - len(done),
            **row_count(rows),
        },
    )


SNAPSHOT_ASSETS: list[AssetsDefinition] = [snapshots]
