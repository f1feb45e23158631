"""The reports domain: the site asset, its jobs (the build, the daily refresh) and schedules.

The site is stale in the UI when it was not rebuilt within CREDITLENS_LEDGER_STALE_AFTER_HOURS,
as the ledger it follows: a build held back by a failed blocking check of the ledger shows up
there (the reconciliation's findings never hold it back).
"""

from __future__ import annotations

from dagster import AssetDep, AssetKey, AssetSpec, Definitions

from pipelines.config.settings import Settings
from pipelines.orchestration.account_checks import account_asset_paths
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
        """Fresh as the ledger, and downstream of every account's reconciliation (each
        account's own assets with an accounts file: pipelines/orchestration/account_checks.py)."""
        deps = [
            AssetDep(AssetKey(path))
            for dep in spec.deps
            for path in account_asset_paths(dep.asset_key.path[-1], settings).values()
        ]
        return spec.replace_attributes(freshness_policy=freshness, deps=deps)

    return Definitions(
        assets=[reports.map_asset_specs(fresh_as_the_ledger)],
        jobs=[report_job, daily_refresh_job],
        schedules=[daily_refresh, monthly_finance_statement],
        resources={"reports_config": ReportsResource.of(settings)},
    )
