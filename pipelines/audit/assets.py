"""The key-exposure audit as a Dagster asset.

Configured by CREDITLENS_AUDIT_INVENTORY (the inventory file) and CREDITLENS_AUDIT_SCAN (paths to
scan, separated by the OS path separator). Results go to the key_audit and key_audit_findings
tables, in one transaction.
"""

from typing import Any

from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from pipelines.audit.report import AuditReport, exit_code, severity_counts
from pipelines.audit.resources import KeyAuditResource
from pipelines.audit.run import land_audit, run_audit
from pipelines.orchestration.metadata import row_count
from pipelines.resources import WarehouseResource
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.warehouse.row_counts import table_rows
from pipelines.warehouse.severity import Severity


@asset(
    name="key_audit",
    group_name="security",
    description="Which API keys read billing data, and where they are used (tables key_audit "
    "and key_audit_findings).",
    kinds={"duckdb", "python"},
    pool=WAREHOUSE_POOL,
)
def key_audit(
    context: AssetExecutionContext, key_audit_config: KeyAuditResource, warehouse: WarehouseResource
) -> MaterializeResult:
    # Without an inventory file, an accounts file gives the keys (pipelines/audit/run.py).
    if key_audit_config.inventory is None and key_audit_config.settings().config_file is None:
        raise Failure(
            "no key inventory: set CREDITLENS_AUDIT_INVENTORY to the inventory file, or use an "
            "accounts file (CREDITLENS_CONFIG) to derive it from"
        )
    with warehouse.step(context, "key_audit"):
        report = run_audit(
            key_audit_config.inventory,
            key_audit_config.scan_paths,
            settings=key_audit_config.settings(),
            api_settings_overrides={"timeout_s": key_audit_config.timeout_s},
            run_id=context.run.run_id,
        )
        land_audit(report, warehouse.warehouse())
        rows = table_rows(warehouse.path, ["key_audit"], lock_timeout_s=warehouse.lock_timeout_s)[
            "key_audit"
        ]
    return MaterializeResult(metadata=audit_metadata(report, rows))


def audit_metadata(report: AuditReport, rows: int) -> dict[str, Any]:
    """What a landed audit records in Dagster, by the asset or by `creditlens audit`
    (pipelines/cli/recorded.py): counts and severities, never a key."""
    by_severity = severity_counts(report)
    return {
        "keys": len(report.keys),
        "findings": len(report.findings),
        "findings_counted": sum(by_severity.values()),
        "severity": report.severity.value,
        "fails_high": bool(exit_code(report, Severity.HIGH)),
        **{f"findings_{k}": v for k, v in by_severity.items()},
        **row_count(rows),
    }
