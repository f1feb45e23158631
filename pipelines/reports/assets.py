"""The report site as a Dagster asset, built from the warehouse alone.

Rebuilt after each ledger sync, in the run of the reconciliation
(pipelines/orchestration/automation.py), unless a blocking check of the reconciliation failed: then
it keeps its older build and goes stale in the UI (its freshness follows the ledger's) rather than
being called fresh.
"""

from datetime import date
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
)
from pydantic import Field

from pipelines.orchestration.automation import with_the_refresh
from pipelines.reports.resources import ReportsResource
from pipelines.resources import WarehouseResource


class ReportConfig(Config):
    month: str = Field(default="", description="YYYY-MM the statement is about; default latest.")


@asset(
    name="reports",
    group_name="reports",
    deps=[AssetKey("balance_breaks"), AssetKey("daily_balance"), AssetKey("ledger_enriched")],
    description="The offline Plotly report site: overview, statements, agents, campaigns, "
    "channels, reconciliation, key audit.",
    kinds={"html", "plotly"},
    automation_condition=with_the_refresh(),
)
def reports(
    context: AssetExecutionContext,
    config: ReportConfig,
    warehouse: WarehouseResource,
    reports_config: ReportsResource,
) -> MaterializeResult:
    month = date.fromisoformat(f"{config.month}-01") if config.month else None
    from dashboards.site import build_site  # only a build pays for the site's modules

    with warehouse.step(context, "reports"):
        accounts = [a.name for a in warehouse.settings().accounts]
        result = build_site(
            warehouse.path,
            reports_config.out_dir,
            account=None,
            month=month,
            lock_timeout_s=warehouse.lock_timeout_s,
            accounts=accounts,
        )
    for notice in result.notices:
        context.log.warning(notice)
    return MaterializeResult(metadata=site_metadata(result))


if TYPE_CHECKING:  # the site (Plotly's pages) is imported when it is built, not by every sync
    from dashboards.site import SiteResult


def site_metadata(result: "SiteResult") -> dict[str, Any]:
    """What a build of the site records in Dagster, by the asset or by `creditlens report`
    (pipelines/cli/recorded.py)."""
    return {
        "index": MetadataValue.path(str(result.index_html)),
        "pages": len(result.pages),
        "accounts": ", ".join(result.accounts),
        "report_months": ", ".join(
            f"{a}: {m.isoformat()[:7] if m else '-'}" for a, m in result.report_months.items()
        ),
    }
