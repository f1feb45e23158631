"""Reconciliation assets: balance breaks, daily balances and the enriched ledger.

Downstream of the ledger and the snapshots, requested after each ledger sync in the run of the
snapshots (pipelines/orchestration/automation.py). Hidden movements and breakdown mismatches are
ERROR-severity asset checks carrying the breaks in their metadata: finance acts on these, so a
failing check must say exactly where and how much. They do not block: a reconciliation that finds
something is a successful run with red checks and their evidence, and the reports that follow it are
rebuilt and show the findings (a stale report when there is something to see would be the
worst moment to be stale). The ledger's completeness and exactness checks are the ones that
block (pipelines/ledger/checks.py).

Each account is reconciled on its own, as the other steps sync it
(pipelines/orchestration/account_work.py): one account's failure is its line, recorded in
``sync_outcomes`` and on its checks, and the others are reconciled. Each account's rows are
staged and validated on their own, then every account that succeeded is written in one
transaction: a failed account is left out of it, and keeps its previous rows.

A reconciliation starts from the first day the sync touched when it can (pipelines/
reconciliation/incremental.py); the run config's ``full_reconcile`` (the CLI's
``--full-reconcile``) re-derives every account's whole history.
"""

import tempfile
from collections.abc import Iterator
from pathlib import Path

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetObservation,
    AssetsDefinition,
    AssetSpec,
    Config,
    MaterializeResult,
    multi_asset,
)
from pydantic import Field

from pipelines.config.account import AccountSettings
from pipelines.config.settings import Settings
from pipelines.orchestration.account_checks import (
    account_asset_paths,
    check_names,
    named_per_account,
)
from pipelines.orchestration.account_work import (
    AccountFailure,
    AccountOutcome,
    at_least_one,
    failures,
    for_each_account,
    succeeded,
)
from pipelines.orchestration.automation import with_the_refresh
from pipelines.orchestration.metadata import row_count
from pipelines.orchestration.sync_outcomes import record_step
from pipelines.reconciliation.resources import ReconcileResource
from pipelines.reconciliation.run import (
    DUCKDB_MEMORY_LIMIT,
    ReconciliationResult,
    breaks_records,
    commit_staged,
    stage_account,
)
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
from pipelines.warehouse.row_counts import account_rows, table_rows
from pipelines.warehouse.writer import StagedDerived, Warehouse
from transforms.cross_checks import CheckOutcome

UPSTREAM = [AssetKey("ledger_entries"), *(AssetKey(table) for table in SNAPSHOT_TABLES)]
GROUP = "reconciliation"  # every asset of the group is one of the multi-asset's OUTPUTS
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


SPECS = {
    "balance_breaks": "Hidden movements of every placement (view hidden_movements).",
    "breakdown_mismatches": "The current period's breakdown items that differ from the ledger.",
    "daily_balance": "Opening, movements by category, hidden movements, closing per day.",
    "ledger_enriched": "Entries in chain order with plan, status and campaign name as of then.",
}
CHECKS = {
    HIDDEN_MOVEMENTS: "Every balance change is explained by a ledger entry.",
    BREAKDOWN: "The current period's breakdown equals the ledger's debits.",
    SUMMARY: "The current balance equals the last entry's balanceAfter.",
}


class ReconciliationRunConfig(Config):
    """How far back this run re-derives."""

    full_reconcile: bool = Field(
        default=False,
        description="Re-derive every account's whole history, not only from the first day the "
        "sync touched (the CLI's --full-reconcile).",
    )


def build_reconciliation(settings: Settings) -> AssetsDefinition:
    """The reconciliation of every configured account, with each account's checks.

    With an accounts file, each account's four outputs are its own assets (``acme/balance_breaks``,
    its checks on it): a run that reconciles some accounts (``creditlens sync --account acme``,
    or one where an account failed) leaves the others' latest materializations, and so their
    checks' last results, as they were. Without one, the plain keys it always had."""
    names = {base: check_names(base, settings) for base in CHECKS}
    per_account = named_per_account(settings)
    keys = {
        output: {a: AssetKey(path) for a, path in account_asset_paths(output, settings).items()}
        for output in OUTPUTS
    }

    @multi_asset(
        name="reconciliation",
        group_name=GROUP,
        pool=WAREHOUSE_POOL,
        specs=[
            AssetSpec(
                keys[output][account],
                deps=UPSTREAM,
                automation_condition=with_the_refresh(),
                description=f"{description} (account {account})" if per_account else description,
                kinds={"duckdb", "polars"},
            )
            for output, description in SPECS.items()
            for account in keys[output]
        ],
        check_specs=[
            AssetCheckSpec(
                name,
                asset=keys["balance_breaks"][account],
                blocking=False,
                description=f"{CHECKS[base]} (account {account})",
            )
            for base, per_account_names in names.items()
            for account, name in per_account_names.items()
        ],
    )
    def reconciliation(
        context: AssetExecutionContext,
        config: ReconciliationRunConfig,
        platform_api: PlatformApiResource,
        warehouse: WarehouseResource,
        reconcile_config: ReconcileResource,
    ) -> Iterator[MaterializeResult | AssetCheckResult | AssetObservation]:
        run_id = context.run.run_id
        accounts = [a.name for a in platform_api.accounts()]
        staging = warehouse.staging_root()
        staging.mkdir(parents=True, exist_ok=True)
        with (
            warehouse.step(context, "reconciliation"),
            # Beside the warehouse (CREDITLENS_STAGING_DIR): a full pass stages every entry.
            tempfile.TemporaryDirectory(prefix=f"reconcile-{run_id}-", dir=staging) as root,
        ):
            wh = warehouse.warehouse()

            def reconcile(account: AccountSettings) -> tuple[ReconciliationResult, StagedDerived]:
                options = reconcile_config.options(account.name)
                return stage_account(
                    wh, account.name, options, run_id, Path(root), full=config.full_reconcile
                )

            # One at a time: each holds its slices in memory while it stages them.
            staged = for_each_account(
                platform_api.accounts(), reconcile, step="reconciliation", concurrency=1
            )
            outcomes = _committed(wh, staged)
            for _, result in succeeded(outcomes):
                context.log.info(f"account {result.account}: reconciliation {result.pass_kind}")
            record_step(wh, "reconciliation", outcomes, tags=context.run.tags, run_id=run_id)
            failed = failures(outcomes)
            for failure in failed:  # before at_least_one, which fails when all did
                context.log.error(failure.line())
                context.log_event(
                    AssetObservation(
                        asset_key=keys["balance_breaks"][failure.account],
                        metadata=failure.metadata(),
                    )
                )
            per_account = named_per_account(platform_api.settings())
            results = [result for _, result in at_least_one(outcomes, per_account=per_account)]
            wh.publish_analyst_copy()
            counts = _row_counts(wh.path, accounts, per_account, wh.lock_timeout_s)
        for result in results:
            summary = ReconciliationSummary.of(result)
            for output in OUTPUTS:
                metadata = (
                    summary.metadata() if output == "balance_breaks" else summary.common_metadata()
                )
                yield MaterializeResult(
                    asset_key=keys[output][result.account],
                    metadata={**metadata, **row_count(counts[output, result.account])},
                )
            for check in account_checks(result):
                yield AssetCheckResult(
                    check_name=names[check.name][result.account],
                    asset_key=keys["balance_breaks"][result.account],
                    passed=check.passed,
                    severity=AssetCheckSeverity.ERROR,
                    metadata={"account": result.account, **check.metadata()},
                )

        for failure in failed:
            # Its tables are left as they were; its outputs record the failure (status and
            # line) rather than being skipped, which would skip what follows in the run (the
            # reports, accounts_synced) for every account.
            for output in OUTPUTS:
                yield MaterializeResult(
                    asset_key=keys[output][failure.account], metadata=failure.metadata()
                )
            for per in names.values():  # its checks say why they could not pass
                yield AssetCheckResult(
                    check_name=per[failure.account],
                    asset_key=keys["balance_breaks"][failure.account],
                    passed=False,
                    severity=AssetCheckSeverity.ERROR,
                    description=failure.line(),
                    metadata={"account": failure.account, "status": "failed",
                              "error": failure.line()},
                )  # fmt: skip

    return reconciliation


def _committed(
    wh: Warehouse, staged: list[AccountOutcome[tuple[ReconciliationResult, StagedDerived]]]
) -> list[AccountOutcome[ReconciliationResult]]:
    """Every staged account written in one transaction; an account that failed to stage is not
    in it: it keeps its failure and its previous rows, and its next pass is full. Should the
    transaction itself fail, nothing was written and every account says so."""
    ready = [o.result[1] for o in staged if o.result is not None]
    failed = [o.account.name for o in staged if o.result is None]
    try:
        commit_staged(wh, ready, DUCKDB_MEMORY_LIMIT, failed)
    except Exception as exc:  # isolation is the point: each account's line says what happened
        return [
            o if o.result is None else AccountOutcome(
                o.account, failure=AccountFailure.of(o.account.name, "reconciliation", exc),
                exception=exc,
            )
            for o in staged
        ]  # fmt: skip
    return [
        AccountOutcome(o.account, failure=o.failure, exception=o.exception)
        if o.result is None
        else AccountOutcome(o.account, result=o.result[0])
        for o in staged
    ]


def _row_counts(
    path: Path, accounts: list[str], per_account: bool, lock_timeout_s: float
) -> dict[tuple[str, str], int]:
    """Each output's rows for each account: its own rows when the asset is the account's, else
    the table's (the one account's asset is the table)."""
    if per_account:
        by_account = account_rows(path, OUTPUTS, lock_timeout_s=lock_timeout_s)
        return {(o, a): by_account.get(o, {}).get(a, 0) for o in OUTPUTS for a in accounts}
    whole = table_rows(path, OUTPUTS, lock_timeout_s=lock_timeout_s)
    return {(o, a): whole.get(o, 0) for o in OUTPUTS for a in accounts}


def account_checks(result: ReconciliationResult) -> tuple[CheckRecord, ...]:
    """The three checks of one account's reconciliation, under their base names."""
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
    return (
        hidden,
        _cross_check(BREAKDOWN, result.breakdown, result.unacknowledged(result.mismatches)),
        _cross_check(
            SUMMARY,
            result.summary,
            result.unacknowledged(movements.filter(movements["kind"] == "summary")),
        ),
    )
