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
``sync_outcomes`` and as its record of each check, and the others are reconciled. Dagster sees
four assets and three checks whatever the number of accounts: each account is a record of the
events' ``account_records`` (docs/scale-out.md, "One event per step, not per company").
Each account's rows are staged and validated on their own, then every account that succeeded
is written in one transaction: a failed account is left out of it, and keeps its previous rows.

A reconciliation starts from the first day the sync touched when it can (pipelines/
reconciliation/incremental.py); the run config's ``full_reconcile`` (the CLI's
``--full-reconcile``) re-derives every account's whole history.
"""

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

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
from pipelines.orchestration.account_work import (
    AccountFailure,
    AccountOutcome,
    at_least_one,
    failures,
    for_each_account,
    named_per_account,
    succeeded,
)
from pipelines.orchestration.automation import with_the_refresh
from pipelines.orchestration.metadata import account_records, row_count
from pipelines.orchestration.sync_outcomes import record_step
from pipelines.reconciliation.resources import ReconcileResource
from pipelines.reconciliation.run import (
    DUCKDB_MEMORY_LIMIT,
    ReconcileOptions,
    ReconciliationResult,
    SharedReads,
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
from pipelines.warehouse.finding_read import OpenFindings, open_findings
from pipelines.warehouse.row_counts import account_rows
from pipelines.warehouse.writer import StagedDerived, Warehouse
from transforms.cross_checks import CheckOutcome

UPSTREAM = [AssetKey("ledger_entries"), *(AssetKey(table) for table in SNAPSHOT_TABLES)]
GROUP = "reconciliation"  # every asset of the group is one of the multi-asset's OUTPUTS
OUTPUTS = ("balance_breaks", "breakdown_mismatches", "daily_balance", "ledger_enriched")
BREAKS = AssetKey("balance_breaks")  # the checks' asset, and each account's record


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


def build_reconciliation() -> AssetsDefinition:
    """The reconciliation of every configured account: four assets and three checks, whatever
    the number of companies.

    Each run materializes each output once and evaluates each check once, every account it
    reconciled in the same events: each account's figures, findings or failure line is its own
    record in ``account_records`` (docs/scale-out.md, "One event per step, not per company").
    A check passes when every account's record passes, and its description names each account
    that did not, with its line."""

    @multi_asset(
        name="reconciliation",
        group_name=GROUP,
        pool=WAREHOUSE_POOL,
        specs=[
            AssetSpec(
                AssetKey(output),
                deps=UPSTREAM,
                automation_condition=with_the_refresh(),
                description=description,
                kinds={"duckdb", "polars"},
            )
            for output, description in SPECS.items()
        ],
        check_specs=[
            AssetCheckSpec(name, asset=BREAKS, blocking=False, description=description)
            for name, description in CHECKS.items()
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
        staging = warehouse.staging_root()
        staging.mkdir(parents=True, exist_ok=True)
        with (
            warehouse.step(context, "reconciliation"),
            # Beside the warehouse (CREDITLENS_STAGING_DIR): a full pass stages every entry.
            tempfile.TemporaryDirectory(prefix=f"reconcile-{run_id}-", dir=staging) as root,
        ):
            wh = warehouse.warehouse()
            accounts = platform_api.accounts()
            # One read connection and one read of the small tables for every account.
            with wh.reading(DUCKDB_MEMORY_LIMIT) as source:
                shared = SharedReads.read(
                    source, [a.name for a in accounts], _options_of(reconcile_config, accounts)
                )

                def reconcile(
                    account: AccountSettings,
                ) -> tuple[ReconciliationResult, StagedDerived]:
                    options = reconcile_config.options(account.name)
                    return stage_account(
                        source, shared, account.name, options, run_id, Path(root),
                        full=config.full_reconcile,
                    )  # fmt: skip

                # One at a time: each holds its slices in memory while it stages them.
                staged = for_each_account(accounts, reconcile, step="reconciliation", concurrency=1)
            outcomes = _committed(wh, staged)
            for _, result in succeeded(outcomes):
                context.log.info(f"account {result.account}: reconciliation {result.pass_kind}")
            record_step(wh, "reconciliation", outcomes, tags=context.run.tags, run_id=run_id)
            failed = failures(outcomes)
            for failure in failed:  # before at_least_one, which fails when all did
                context.log.error(failure.line())
            if failed:
                context.log_event(
                    AssetObservation(
                        asset_key=BREAKS, metadata=account_records(f.metadata() for f in failed)
                    )
                )
            per_account = named_per_account(platform_api.settings())
            results = [result for _, result in at_least_one(outcomes, per_account=per_account)]
            wh.publish_analyst_copy()
            names = [r.account for r in results]

            others = open_findings(
                wh.path, platform_api.settings().unselected, lock_timeout_s=wh.lock_timeout_s
            )
            by_account = account_rows(wh.path, OUTPUTS, lock_timeout_s=wh.lock_timeout_s)
        summaries = [
            {
                **ReconciliationSummary.of(result).metadata(),
                **{f"rows_{o}": by_account.get(o, {}).get(result.account, 0) for o in OUTPUTS},
            }
            for result in results
        ]
        # Every account's figures in one event, read back by the CLI (pipelines/cli/runner.py).
        yield AssetObservation(asset_key=BREAKS, metadata=account_records(summaries))
        totals = {
            "accounts": len(results),
            "accounts_failed": len(failed),
            "accounts_reconciled": ", ".join(names),
        }
        lone = ReconciliationSummary.of(results[0]) if len(results) == 1 and not failed else None
        for output in OUTPUTS:
            # One account's run keeps its figures on the materializations too, as it always had.
            own = {} if lone is None else (
                lone.metadata() if AssetKey(output) == BREAKS else lone.common_metadata()
            )  # fmt: skip
            yield MaterializeResult(
                asset_key=AssetKey(output),
                metadata={**own, **totals, **row_count(sum(by_account.get(output, {}).values()))},
            )
        verdicts = {r.account: {c.name: c for c in account_checks(r)} for r in results}
        for name in CHECKS:
            yield _check(name, results, verdicts, failed, list(others.values()))

    return reconciliation


def _options_of(
    reconcile_config: ReconcileResource, accounts: Sequence[AccountSettings]
) -> dict[str, ReconcileOptions]:
    """Each account's options, for the one pass over every tail; an account whose options
    cannot be made is left to its own pass, which fails with them alone."""
    found = {}
    for account in accounts:
        try:
            found[account.name] = reconcile_config.options(account.name)
        except Exception:  # its own pass raises it again, as its own failure
            continue
    return found


def _check(
    name: str,
    results: list[ReconciliationResult],
    verdicts: dict[str, dict[str, CheckRecord]],
    failed: list[AccountFailure],
    others: list[OpenFindings],
) -> AssetCheckResult:
    """One check for every account: each account's verdict its own record; the check fails
    when one of them does, and its description names each, with its line. A failed account's
    record says why it could not pass (its tables are left as they were); an account this run
    left out (``--account``) carries its open findings from the warehouse."""
    records: list[dict[str, Any]] = []
    lines: list[str] = []
    for result in results:
        check = verdicts[result.account][name]
        records.append({"account": result.account, "passed": check.passed, **check.metadata()})
        if not check.passed:
            lines.append(f"{result.account}: {check.message or 'failed'}")
    for failure in failed:
        records.append({"account": failure.account, "passed": False, "status": "failed",
                        "error": failure.line()})  # fmt: skip
        lines.append(failure.line())
    for carried in others:
        still_open = {HIDDEN_MOVEMENTS: carried.hidden, BREAKDOWN: carried.breakdown,
                      SUMMARY: carried.summary}[name]  # fmt: skip
        message = (
            f"not in this run; {still_open} finding(s) not acknowledged as of its latest "
            f"reconciliation (run {carried.last_run_id})"
            if carried.last_run_id
            else "not in this run; never reconciled"
        )
        records.append({"account": carried.account, "passed": not still_open,
                        "status": "carried", "message": message})  # fmt: skip
        if still_open:
            lines.append(f"{carried.account}: {message}")
    own = {k: v for k, v in records[0].items() if k != "passed"} if len(records) == 1 else {}
    accounts = len(records)
    return AssetCheckResult(
        check_name=name,
        asset_key=BREAKS,
        passed=not lines,
        severity=AssetCheckSeverity.ERROR,
        description=(
            f"{len(lines)} of {accounts} account(s): " + "; ".join(lines) if lines else None
        ),
        metadata={
            **own,
            "accounts": accounts,
            "accounts_failing": len(lines),
            **account_records(records),
        },
    )


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
