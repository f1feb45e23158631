"""Landing an audit run in the warehouse: the report module stays pure data, this does I/O."""

from __future__ import annotations

from pathlib import Path

from pipelines.audit.report import AuditReport
from pipelines.warehouse.writer import Warehouse


def land_audit(report: AuditReport, warehouse: Warehouse) -> Path:
    """The run's keys and findings in one transaction (so a page never shows keys without
    their findings), then the analyst copy; the CLI and the Dagster asset both land this way."""
    warehouse.append_tables(report.tables())
    warehouse.publish_analyst_copy()
    return warehouse.path
