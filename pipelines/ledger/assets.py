"""The ledger asset: whole UTC days of the credit ledger, landed exactly once.

Single-run backfill policy: a backfill over any range is one run that reads it in windows of at
most 366 days, not one run (and one API window) per day.

Every configured account is synced by the same step, several at once
(pipelines/orchestration/account_work.py): Dagster's fixed costs are paid once per run, not once
per company, and the day stays the only partition (docs/scale-out.md: an account partition beside
it would multiply the per-day events by the accounts). The account is in every landed row, in each
account's observation and in its own checks; one account failing is named by the
``accounts_synced`` check (pipelines/ledger/checks.py), and the others land.

Metadata is honest per partition: each day's materialization carries that day's own counts, read
back from the warehouse (entries landed and quarantined, ``dagster/row_count``), so summing the
partitions gives the truth. Each account's totals (range, windows, pages, requests, time, the
wait for the lock) are recorded once, as an observation of the asset; a backfill of a month used
to repeat them on each of its 31 days.
"""

from datetime import date
from functools import partial

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetObservation,
    AssetsDefinition,
    BackfillPolicy,
    Config,
    DailyPartitionsDefinition,
    FreshnessPolicy,
    MaterializeResult,
    MetadataValue,
    asset,
)
from pydantic import Field

from pipelines.config.account import AccountSettings
from pipelines.config.settings import Settings
from pipelines.ledger.sync import LedgerSyncResult, StagedLedger, land_staged, stage_ledger
from pipelines.orchestration.account_work import (
    at_least_one,
    failures,
    for_each_account,
    named_per_account,
    settle,
    succeeded,
)
from pipelines.orchestration.metadata import account_records, row_count
from pipelines.orchestration.sync_outcomes import record_step
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.runtime import progress
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


class LedgerRunConfig(Config):
    """Where each account resumes, when later than the run's first day: the CLI's per-account
    resume points (each account's last synced day minus the lookback), so one run covers
    accounts of different ages without re-reading an up-to-date one from the earliest day."""

    since: dict[str, str] = Field(
        default_factory=dict,
        description="Account name -> first UTC day (YYYY-MM-DD) to sync for it, when later than "
        "the run's first partition; accounts not listed sync the run's whole range.",
    )


def _start(config: LedgerRunConfig, account: str, first: date) -> date:
    day = config.since.get(account)
    return max(first, date.fromisoformat(day)) if day else first


def _threads_only(account: AccountSettings) -> AccountSettings:
    """Several accounts at once: their windows are read in threads, never in worker processes
    (one sync's processes per account would multiply past the machine's cores)."""
    return account.model_copy(update={"api": account.api.model_copy(update={"processes": 1})})


def build_ledger_asset(
    settings: Settings, partitions: DailyPartitionsDefinition, freshness: FreshnessPolicy
) -> AssetsDefinition:
    @asset(
        name="ledger_entries",
        group_name="ledger",
        partitions_def=partitions,
        backfill_policy=BackfillPolicy.single_run(),
        pool=WAREHOUSE_POOL,
        freshness_policy=freshness,
        description=(
            "The credit ledger (GET /Consumption/transactions) of every configured account, one "
            "row per entry in the DuckDB table ledger_entries; each run replaces exactly the UTC "
            "days it covers, account by account, several accounts at once "
            "(CREDITLENS_ACCOUNT_CONCURRENCY). Each day's materialization carries that day's "
            "counts; each account's totals are an observation."
        ),
        kinds={"duckdb", "python"},
    )
    def ledger_entries(
        context: AssetExecutionContext,
        config: LedgerRunConfig,
        platform_api: PlatformApiResource,
        warehouse: WarehouseResource,
    ) -> MaterializeResult:
        key_range = context.partition_key_range
        first = date.fromisoformat(key_range.start)
        last = date.fromisoformat(key_range.end)
        accounts = platform_api.accounts()
        several = len(accounts) > 1
        progress.report("ledger.start", first=first, last=last, accounts=len(accounts))
        with warehouse.step(context, "ledger_entries"):
            wh = warehouse.warehouse()

            def stage(account: AccountSettings) -> StagedLedger:
                reading = _threads_only(account) if several else account
                with platform_api.client(reading) as client:
                    return stage_ledger(
                        client,
                        account=account.name,
                        first=_start(config, account.name, first),
                        last=last,
                        run_id=context.run.run_id,
                        staging_root=warehouse.staging_root(),
                        on_page=lambda page: progress.report(
                            "ledger.page",
                            entries=page.count,
                            window=str(page.window),
                            account=account.name,
                        ),
                    )

            # Every account read and staged on disk first, several at once; then all of them
            # landed in one transaction (pipelines/warehouse/one_commit.py), one failing left out.
            staged = for_each_account(
                accounts,
                stage,
                step="ledger",
                concurrency=platform_api.settings().account_concurrency,
            )
            outcomes = settle(staged, partial(land_staged, wh), step="ledger")
            if succeeded(outcomes):
                wh.publish_analyst_copy()
            failed = failures(outcomes)
            for failure in failed:
                progress.report("ledger.failed", failure=failure)
                context.log.error(failure.line())
            if failed:  # every failed account's line in one event, whatever their number
                context.log_event(
                    AssetObservation(
                        asset_key=LEDGER,
                        metadata=account_records(f.metadata() for f in failed),
                    )
                )
            record_step(wh, "ledger", outcomes, tags=context.run.tags, run_id=context.run.run_id)
            landed = at_least_one(outcomes, per_account=named_per_account(platform_api.settings()))
            days = ledger_days(
                warehouse.path,
                [a.name for a, _ in landed],
                first,
                last,
                lock_timeout_s=warehouse.lock_timeout_s,
            )
        for account, result in landed:
            progress.report("ledger.done", result=result)
            context.log.info(f"{account.name}: {result.summary()}")
        context.log_event(
            AssetObservation(
                asset_key=LEDGER,
                metadata=account_records(run_totals(result) for _, result in landed),
            )
        )
        for key in context.partition_keys:
            context.add_asset_metadata(
                day_metadata(days.get(date.fromisoformat(key), DayRows())), partition_key=key
            )
        return MaterializeResult()

    return ledger_entries
