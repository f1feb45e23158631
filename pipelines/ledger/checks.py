"""Checks on the landed ledger that Dagster records with every materialization.

The two invariants are ERROR checks that block: a run that landed a broken ledger stops there,
and the refresh that follows the ledger (pipelines/automation.py) is not requested over it.

They are checked for every account, in one connection, and each names the accounts that broke
it, with every account's figures in its metadata; they are not one check per account, unlike the
reconciliation's. Dagster plans a check of a partitioned asset once per partition of the run: a
check per account on the ledger made 50 accounts x 3 checks x 730 days = 110,000 planned rows
(256 MB of Dagster's index, 62 s before the first request) for one two-year backfill.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    multi_asset_check,
)

from pipelines.account_checks import named_per_account
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.settings import Settings
from pipelines.sync_outcomes import sync_id_of
from pipelines.warehouse.outcomes import outcomes_of_sync
from pipelines.warehouse.read import SyncCounts, duplicate_entry_ids_of, latest_sync_counts_of

LEDGER = AssetKey("ledger_entries")
FETCHED = "fetched_equals_landed_plus_quarantined"
UNIQUE = "entry_ids_unique"
# With an accounts file: the accounts whose sync failed in this sync so far (settings, history
# discovery before the run, the ledger in it: sync_outcomes), each with its line; not blocking:
# the others landed and are refreshed. Without one, the account's failure fails the run, as it
# always has.
SYNCED = "accounts_synced"
DESCRIPTIONS = {
    FETCHED: "Nothing lost, nothing doubled: for every account, each entry fetched is landed or "
    "quarantined.",
    UNIQUE: "Each (account, entry_id) appears once: the identity rule holds in the warehouse.",
}


def build_ledger_checks(settings: Settings) -> AssetChecksDefinition:
    specs = [AssetCheckSpec(n, asset=LEDGER, blocking=True, description=d) for n, d in
             DESCRIPTIONS.items()]  # fmt: skip
    if named_per_account(settings):
        specs.append(
            AssetCheckSpec(
                SYNCED,
                asset=LEDGER,
                blocking=False,
                description="Every account synced in this run: one whose key is rejected or "
                "whose host is unreachable is named here, and the others land.",
            )
        )

    @multi_asset_check(name="ledger_checks", specs=specs)
    def ledger_checks(
        context: AssetCheckExecutionContext,
        platform_api: PlatformApiResource,
        warehouse: WarehouseResource,
    ) -> Iterator[AssetCheckResult]:
        accounts = [a.name for a in platform_api.accounts()]
        with warehouse.step(context, "ledger_checks"):
            counts = latest_sync_counts_of(warehouse.path, accounts)
            duplicates = duplicate_entry_ids_of(warehouse.path, accounts)
        yield _invariant(accounts, counts)
        broken = sorted(a for a in accounts if duplicates[a])
        yield AssetCheckResult(
            check_name=UNIQUE,
            asset_key=LEDGER,
            passed=not broken,
            severity=AssetCheckSeverity.ERROR,
            description=f"repeated entry ids in {', '.join(broken)}" if broken else None,
            metadata={"duplicate_ids": sum(duplicates.values()), **_by_account(duplicates)},
        )
        if len(specs) > len(DESCRIPTIONS):
            run = context.run
            failed, recorded = _failures_of_sync(warehouse.path, sync_id_of(run.tags, run.run_id))
            every = [*accounts, *(a for a in recorded if a not in accounts)]
            yield _synced(every, counts, failed, run.run_id)

    return ledger_checks


def _by_account(values: dict[str, Any]) -> dict[str, Any]:
    """Each account's figure under its own key, so the UI lists them."""
    return {f"account {account}": value for account, value in sorted(values.items())}


def _invariant(accounts: list[str], counts: dict[str, SyncCounts]) -> AssetCheckResult:
    broken = sorted(a for a, c in counts.items() if c.fetched != c.landed + c.quarantined)
    if len(accounts) == 1:  # as it always read: the one account's figures
        only = counts.get(accounts[0])
        if only is None:
            return AssetCheckResult(
                check_name=FETCHED, passed=True, metadata={"note": "no sync recorded yet"}
            )
        return AssetCheckResult(
            check_name=FETCHED,
            asset_key=LEDGER,
            passed=not broken,
            severity=AssetCheckSeverity.ERROR,
            description=(
                f"fetched {only.fetched} != landed {only.landed} + quarantined {only.quarantined}"
                if broken
                else None
            ),
            metadata={
                "run_id": only.run_id,
                "fetched": only.fetched,
                "landed": only.landed,
                "quarantined": only.quarantined,
            },
        )
    figures = {
        a: f"fetched {c.fetched} = landed {c.landed} + quarantined {c.quarantined}"
        + ("" if a not in broken else " BROKEN")
        for a, c in counts.items()
    }
    return AssetCheckResult(
        check_name=FETCHED,
        asset_key=LEDGER,
        passed=not broken,
        severity=AssetCheckSeverity.ERROR,
        description=f"fetched != landed + quarantined in {', '.join(broken)}" if broken else None,
        metadata={
            "accounts": len(accounts),
            "accounts_never_synced": len(accounts) - len(counts),
            **_by_account(figures),
        },
    )


def _failures_of_sync(path: Path, sync_id: str) -> tuple[dict[str, str], list[str]]:
    """Per account, the first failure this sync recorded (settings, discovery, the ledger),
    and every account it recorded: those that failed before this run never reached it."""
    failed: dict[str, str] = {}
    seen: list[str] = []
    for outcome in outcomes_of_sync(path, sync_id):
        if outcome.account not in seen:
            seen.append(outcome.account)
        if outcome.result == "failed" and outcome.error:
            failed.setdefault(outcome.account, outcome.error)
    return failed, seen


def _synced(
    accounts: list[str],
    counts: dict[str, SyncCounts],
    failed: dict[str, str],
    run_id: str,
) -> AssetCheckResult:
    """Failed: the accounts of this sync with no sync recorded by this run, each with its line."""
    lines = {}
    for account in accounts:
        if account in failed:
            lines[account] = failed[account]
        elif account not in counts or counts[account].run_id != run_id:
            lines[account] = f"account {account}: ledger: no sync of it was recorded by this run"
    return AssetCheckResult(
        check_name=SYNCED,
        asset_key=LEDGER,
        passed=not lines,
        severity=AssetCheckSeverity.ERROR,
        description="; ".join(lines.values()) or None,
        metadata={
            "accounts": len(accounts),
            "accounts_failed": len(lines),
            **_by_account({a: lines.get(a, "synced") for a in accounts}),
        },
    )
