"""The ledger domain: daily partitions from CREDITLENS_LEDGER_START, the sync job, its daily
schedule (with CREDITLENS_LOOKBACK_DAYS) and the checks on what it landed."""

from __future__ import annotations

from dagster import Definitions

from pipelines.ledger.assets import build_ledger_asset
from pipelines.ledger.checks import entry_ids_unique, fetched_equals_landed_plus_quarantined
from pipelines.ledger.partitions import ledger_partitions
from pipelines.ledger.schedules import build_ledger_job, build_ledger_schedule
from pipelines.settings import Settings


def build_definitions(settings: Settings) -> Definitions:
    """Uses the shared platform_api and warehouse resources; the partitions come from settings."""
    partitions = ledger_partitions(settings.ledger_start)
    job = build_ledger_job()
    return Definitions(
        assets=[build_ledger_asset(partitions)],
        asset_checks=[fetched_equals_landed_plus_quarantined, entry_ids_unique],
        jobs=[job],
        schedules=[build_ledger_schedule(job, partitions, settings.lookback_days)],
    )
