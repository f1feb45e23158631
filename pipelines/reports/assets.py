"""The report site as a Dagster asset, rebuilt daily and, on the 1st, for the month just ended."""

from datetime import date, timedelta
from pathlib import Path

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetSelection,
    Config,
    ConfigurableResource,
    MaterializeResult,
    MetadataValue,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    asset,
    define_asset_job,
    schedule,
)
from pydantic import Field

from dashboards import build_site
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.snapshots.fetch import ENDPOINTS


class ReportsResource(ConfigurableResource):
    out_dir: str = Field(default="creditlens-reports", description="CREDITLENS_REPORTS_DIR.")


class ReportConfig(Config):
    month: str = Field(default="", description="YYYY-MM the statement is about; default latest.")


@asset(
    name="reports",
    group_name="reports",
    deps=[AssetKey("balance_breaks"), AssetKey("daily_balance"), AssetKey("ledger_enriched")],
    description="The offline Plotly report site: overview, statements, agents, campaigns, "
    "channels, reconciliation, key audit.",
    kinds={"html", "plotly"},
)
def reports(
    context: AssetExecutionContext,
    config: ReportConfig,
    platform_api: PlatformApiResource,
    warehouse: WarehouseResource,
    reports_config: ReportsResource,
) -> MaterializeResult:
    month = date.fromisoformat(f"{config.month}-01") if config.month else None
    result = build_site(
        Path(warehouse.path), Path(reports_config.out_dir), account=None, month=month
    )
    for notice in result.notices:
        context.log.warning(notice)
    return MaterializeResult(
        metadata={
            "index": MetadataValue.path(str(result.index_html)),
            "pages": len(result.pages),
            "accounts": ", ".join(result.accounts),
            "report_months": ", ".join(
                f"{a}: {m.isoformat()[:7] if m else '-'}" for a, m in result.report_months.items()
            ),
        }
    )


report_job = define_asset_job(
    "report_build", selection=AssetSelection.assets("reports"), description="Build the site."
)

daily_refresh_job = define_asset_job(
    "daily_refresh",
    selection=AssetSelection.assets(
        *ENDPOINTS, "balance_breaks", "daily_balance", "ledger_enriched", "reports"
    ),
    description="Snapshots, reconciliation and the report site, after the daily ledger sync.",
)

daily_refresh = ScheduleDefinition(
    name="daily_refresh",
    job=daily_refresh_job,
    cron_schedule="45 0 * * *",
    execution_timezone="UTC",
    description="Daily at 00:45 UTC, after the ledger sync: snapshots, reconciliation, reports.",
)


@schedule(
    job=report_job,
    cron_schedule="0 2 1 * *",
    execution_timezone="UTC",
    name="monthly_finance_statement",
    description="On the 1st at 02:00 UTC: the report site about the month just ended.",
)
def monthly_finance_statement(context: ScheduleEvaluationContext) -> RunRequest:
    first = context.scheduled_execution_time.date().replace(day=1)
    previous = (first - timedelta(days=1)).strftime("%Y-%m")
    return RunRequest(
        run_key=f"statement-{previous}",
        run_config={"ops": {"reports": {"config": {"month": previous}}}},
    )
