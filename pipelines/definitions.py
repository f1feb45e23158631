"""The Dagster code location: every domain's assets, checks, jobs and schedules, merged.

``dagster dev -w workspace.yaml`` loads ``defs``; ``creditlens sync`` runs the same definitions
in-process, so the CLI and the UI cannot drift apart.
"""

from __future__ import annotations

import json
import warnings

from dagster import BetaWarning, Definitions, EnvVar
from pydantic import ValidationError

from pipelines.api.errors import ConfigurationError
from pipelines.api.settings import describe_validation_error, options_from_env
from pipelines.audit.assets import KeyAuditResource, audit_job, key_audit, weekly_key_audit
from pipelines.ledger.assets import build_ledger_asset
from pipelines.ledger.checks import entry_ids_unique, fetched_equals_landed_plus_quarantined
from pipelines.ledger.partitions import ledger_partitions
from pipelines.ledger.schedules import build_ledger_job, build_ledger_schedule
from pipelines.reconciliation.assets import ReconcileResource, reconciliation
from pipelines.reconciliation.schedules import reconciliation_job
from pipelines.reports.assets import (
    ReportsResource,
    daily_refresh,
    daily_refresh_job,
    monthly_finance_statement,
    report_job,
    reports,
)
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.settings import Settings
from pipelines.snapshots.assets import SNAPSHOT_ASSETS
from pipelines.snapshots.schedules import snapshot_job

# BackfillPolicy is "beta" in Dagster 1.13; the single-run policy is what the ledger needs.
warnings.filterwarnings("ignore", category=BetaWarning)


def _api_resource(settings: Settings, options: dict[str, str]) -> PlatformApiResource:
    return PlatformApiResource(
        base_url=EnvVar("CREDITLENS_BASE_URL"),
        api_key=EnvVar("CREDITLENS_API_KEY"),
        account=settings.account,
        summary_balance_field=settings.summary_balance_field,
        snapshot_fields_json=json.dumps(settings.snapshot_fields),
        **{k: v for k, v in options.items()},  # type: ignore[arg-type]
    )


def build_resources(settings: Settings) -> dict[str, object]:
    options = options_from_env()
    try:
        api = _api_resource(settings, options)
    except ValidationError as exc:  # a bad CREDITLENS_* value: one line naming the variable
        raise ConfigurationError(describe_validation_error(exc)) from None
    warehouse = WarehouseResource(
        path=str(settings.warehouse),
        analyst_copy=str(settings.analyst_copy or ""),
        staging_dir=str(settings.staging_dir or ""),
    )
    return {
        "platform_api": api,
        "warehouse": warehouse,
        "key_audit_config": KeyAuditResource.from_env(),
        "reports_config": ReportsResource(out_dir=str(settings.reports_dir)),
        "reconcile_config": ReconcileResource(
            sign_convention=settings.sign_convention,
            tolerance=str(settings.tolerance),
            debit_type_pattern=settings.debit_type_pattern,
            **(
                {"slice_entries": settings.reconcile_slice_entries}
                if settings.reconcile_slice_entries is not None
                else {}
            ),
        ),
    }


def build_definitions(settings: Settings | None = None) -> Definitions:
    settings = settings or Settings.from_env()
    partitions = ledger_partitions(settings.ledger_start)
    ledger_asset = build_ledger_asset(partitions)
    ledger_job = build_ledger_job(partitions)
    return Definitions(
        assets=[ledger_asset, *SNAPSHOT_ASSETS, reconciliation, reports, key_audit],
        asset_checks=[fetched_equals_landed_plus_quarantined, entry_ids_unique],
        jobs=[
            ledger_job,
            snapshot_job,
            reconciliation_job,
            report_job,
            daily_refresh_job,
            audit_job,
        ],
        schedules=[
            build_ledger_schedule(ledger_job, partitions, settings.lookback_days),
            daily_refresh,
            monthly_finance_statement,
            weekly_key_audit,
        ],
        resources=build_resources(settings),
    )


defs = build_definitions()
