"""The key-exposure audit as a Dagster asset, with a weekly schedule.

Configured by CREDITLENS_AUDIT_INVENTORY (the inventory file) and CREDITLENS_AUDIT_SCAN (paths to
scan, separated by the OS path separator). Results go to the key_audit table.
"""

import os

from dagster import (
    AssetExecutionContext,
    AssetSelection,
    ConfigurableResource,
    Failure,
    MaterializeResult,
    ScheduleDefinition,
    asset,
    define_asset_job,
)
from pydantic import Field

from pipelines.audit.report import exit_code
from pipelines.audit.run import run_audit
from pipelines.audit.severity import Severity
from pipelines.resources import WarehouseResource


class KeyAuditResource(ConfigurableResource):
    inventory: str = Field(default="", description="Inventory file (CREDITLENS_AUDIT_INVENTORY).")
    scan_paths: str = Field(default="", description="Paths to scan, os.pathsep-separated.")
    timeout_s: float = 5.0

    @classmethod
    def from_env(cls) -> "KeyAuditResource":
        return cls(
            inventory=os.environ.get("CREDITLENS_AUDIT_INVENTORY", ""),
            scan_paths=os.environ.get("CREDITLENS_AUDIT_SCAN", ""),
        )


@asset(
    name="key_audit",
    group_name="security",
    description="Which API keys read billing data, and where they are used (table key_audit).",
    kinds={"duckdb", "python"},
)
def key_audit(
    context: AssetExecutionContext, key_audit_config: KeyAuditResource, warehouse: WarehouseResource
) -> MaterializeResult:
    if not key_audit_config.inventory:
        raise Failure("no key inventory: set CREDITLENS_AUDIT_INVENTORY to the inventory file")
    scans = [p for p in key_audit_config.scan_paths.split(os.pathsep) if p]
    report = run_audit(
        key_audit_config.inventory,
        scans,
        api_settings_overrides={"timeout_s": key_audit_config.timeout_s},
        run_id=context.run.run_id,
    )
    wh = warehouse.warehouse()
    wh.append("key_audit", report.rows())
    wh.publish_analyst_copy()
    by_severity = {s.value: 0 for s in Severity}
    for finding in report.findings:
        by_severity[finding.severity.value] += 1
    return MaterializeResult(
        metadata={
            "keys": len(report.keys),
            "findings": len(report.findings),
            "severity": report.severity.value,
            "fails_high": bool(exit_code(report, Severity.HIGH)),
            **{f"findings_{k}": v for k, v in by_severity.items() if k != "none"},
        }
    )


audit_job = define_asset_job(
    "key_audit_run", selection=AssetSelection.assets("key_audit"), description="Run the key audit."
)

weekly_key_audit = ScheduleDefinition(
    name="weekly_key_audit",
    job=audit_job,
    cron_schedule="0 6 * * 1",
    execution_timezone="UTC",
    description="Mondays at 06:00 UTC.",
)
