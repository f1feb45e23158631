"""The reports domain: the site asset, its jobs (the build, the daily refresh) and schedules.

The site is stale in the UI when it was not rebuilt within CREDITLENS_LEDGER_STALE_AFTER_HOURS,
as the ledger it follows: a build held back by a failed blocking check of the ledger shows up
there (the reconciliation's findings never hold it back).
"""

from __future__ import annotations

from dagster import AssetSpec, Definitions

from pipelines.config.settings import Settings
from pipelines.orchestration.automation import ledger_freshness
from pipelines.reports.assets import reports
from pipelines.reports.resources import ReportsResource
from pipelines.reports.schedules import (
    daily_refresh,
    daily_refresh_job,
    monthly_finance_statement,
    report_job,
)


def build_definitions(settings: Settings) -> Definitions:
    freshness = ledger_freshness(settings.ledger_stale_after_hours)

    def fresh_as_the_ledger(spec: AssetSpec) -> AssetSpec:
        return spec.replace_attributes(freshness_policy=freshness)

    return Definitions(
        assets=[reports.map_asset_specs(fresh_as_the_ledger)],
        jobs=[report_job, daily_refresh_job],
        schedules=[daily_refresh, monthly_finance_statement],
        resources={"reports_config": ReportsResource.of(settings)},
    )
