"""``accounts_synced``: every account of the sync that failed, at whatever step, with its line.

With an accounts file, one company's rejected key or unreachable host fails only that company;
this check is where Dagster says which one and why. It reads ``sync_outcomes`` (what every step
of this sync recorded: pipelines/orchestration/sync_outcomes.py), so it also names an account that
failed before the ledger run and never reached it (its key variable unset, its key rejected by
history discovery). ERROR, not blocking: the others landed and are refreshed.

It is evaluated in the ledger run, after the ledger (settings, discovery and the ledger so far),
and again at the end of a sync's reconciliation run, after every account's ``balance_breaks``
(its extra dependencies), when the snapshots and the reconciliation have said their part too.
Both target the ledger's latest materialization, so the UI shows the later, complete one.
Without an accounts file there is no such check: the account's failure fails the run, as it
always has.
"""

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetKey,
    asset_check,
)

from pipelines.config.settings import Settings
from pipelines.orchestration.account_work import named_per_account
from pipelines.orchestration.sync_outcomes import sync_id_of
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.warehouse.outcomes import StepOutcome, outcomes_of_sync

LEDGER = AssetKey("ledger_entries")
SYNCED = "accounts_synced"
SYNCED_KEY = AssetCheckKey(LEDGER, SYNCED)


def build_accounts_synced(settings: Settings) -> list[AssetChecksDefinition]:
    """The check, with an accounts file; none without one."""
    if not named_per_account(settings):
        return []

    @asset_check(
        asset=LEDGER,
        name=SYNCED,
        blocking=False,
        # after every account's reconciliation, so the reconciliation run evaluates it last
        additional_deps=[AssetKey("balance_breaks")],
        description="Every account of the sync synced: one that failed at any step (a key "
        "rejected by history discovery or the ledger, an unreachable host, a failed "
        "reconciliation) is named here with its line, and the others land.",
    )
    def accounts_synced(
        context: AssetCheckExecutionContext,
        platform_api: PlatformApiResource,
        warehouse: WarehouseResource,
    ) -> AssetCheckResult:
        run = context.run
        with warehouse.step(context, SYNCED):
            outcomes = outcomes_of_sync(
                warehouse.path,
                sync_id_of(run.tags, run.run_id),
                lock_timeout_s=warehouse.lock_timeout_s,
            )
        return synced([a.name for a in platform_api.accounts()], outcomes)

    return [accounts_synced]


def synced(accounts: list[str], outcomes: list[StepOutcome]) -> AssetCheckResult:
    """Failed: each account whose first failure this sync recorded, with that line; and, when
    the sync synced the ledger, each account of it whose ledger it did not record."""
    every = [*accounts, *dict.fromkeys(o.account for o in outcomes if o.account not in accounts)]
    lines: dict[str, str] = {}
    for outcome in outcomes:
        if outcome.result == "failed" and outcome.error:
            lines.setdefault(outcome.account, outcome.error)
    ledger = {o.account for o in outcomes if o.step == "ledger"}
    for account in every:
        if ledger and account not in ledger and account not in lines:
            lines[account] = f"account {account}: ledger: no sync of it was recorded by this sync"
    return AssetCheckResult(
        passed=not lines,
        severity=AssetCheckSeverity.ERROR,
        description="; ".join(lines[a] for a in every if a in lines) or None,
        metadata={
            "accounts": len(every),
            "accounts_failed": len(lines),
            **{f"account {a}": lines.get(a, "synced") for a in sorted(every)},
        },
    )
