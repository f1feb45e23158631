"""`creditlens report`: the site from the warehouse alone, no API call."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from dashboards.read import ReportError
from dashboards.site import SiteResult, build_site
from pipelines.cli.errors import UsageError
from pipelines.config.settings import Settings
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.lake import shown


def parse_month(text: str | None) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(f"{text.strip()[:7]}-01")
    except ValueError:
        raise UsageError(f"--month must look like 2025-03, got {text!r}") from None


def run_report(
    settings: Settings, month: str | None, account: str | None, out: str | None
) -> SiteResult:
    if not warehouse_exists(settings.warehouse):
        raise UsageError(
            f"no warehouse at {shown(settings.warehouse)} (CREDITLENS_WAREHOUSE): "
            "run `creditlens sync`"
        )
    try:
        site = build_site(
            settings.warehouse,
            Path(out) if out else settings.reports_dir,
            account=account,
            month=parse_month(month),
            lock_timeout_s=settings.lock_timeout_s,
            accounts=[a.name for a in settings.accounts],
        )
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    if not (month or account or out):  # the site the `reports` asset builds, whole
        from pipelines.cli.recorded import record_site  # Dagster's imports: only to record

        record_site(settings, site)
    return site
