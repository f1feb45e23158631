"""The reports domain: the site asset, its jobs (the build, the daily refresh) and schedules."""

from __future__ import annotations

from dagster import Definitions

from pipelines.reports.assets import reports
from pipelines.reports.resources import ReportsResource
from pipelines.reports.schedules import (
    daily_refresh,
    daily_refresh_job,
    monthly_finance_statement,
    report_job,
)
from pipelines.settings import Settings


def build_definitions(settings: Settings) -> Definitions:
    return Definitions(
        assets=[reports],
        jobs=[report_job, daily_refresh_job],
        schedules=[daily_refresh, monthly_finance_statement],
        resources={"reports_config": ReportsResource.of(settings)},
    )
