"""The ledger domain: daily partitions from where the ledger begins, the sync job, its daily
schedule (with CREDITLENS_LOOKBACK_DAYS), the checks on what it landed, and its freshness
(stale CREDITLENS_LEDGER_STALE_AFTER_HOURS after the last sync)."""

from __future__ import annotations

from dagster import Definitions, define_asset_job

from pipelines.config.settings import Settings
from pipelines.ledger.accounts_synced import build_accounts_synced
from pipelines.ledger.assets import build_ledger_asset
from pipelines.ledger.checks import build_ledger_checks
from pipelines.ledger.history_asset import ledger_history
from pipelines.ledger.partitions import ledger_partitions, ledger_start_day
from pipelines.ledger.schedules import build_ledger_job, build_ledger_schedule
from pipelines.orchestration.automation import ledger_freshness


def build_definitions(settings: Settings) -> Definitions:
    """Uses the shared platform_api and warehouse resources; the partitions start where the
    ledger begins (pipelines/ledger/partitions.py)."""
    partitions = ledger_partitions(ledger_start_day(settings))
    job = build_ledger_job()
    discovery = define_asset_job(
        "ledger_history_discovery",
        selection=[ledger_history.key],
        description="Find where the company's ledger begins (run once, then reload).",
    )
    return Definitions(
        assets=[
            ledger_history,
            build_ledger_asset(
                settings, partitions, ledger_freshness(settings.ledger_stale_after_hours)
            ),
        ],
        asset_checks=[build_ledger_checks(settings), *build_accounts_synced(settings)],
        jobs=[job, discovery],
        schedules=[build_ledger_schedule(job, partitions, settings.lookback_days)],
    )
