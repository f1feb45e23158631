"""The reconciliation domain: its multi-asset with checks, its job and its settings resource."""

from __future__ import annotations

from dagster import Definitions

from pipelines.config.settings import Settings
from pipelines.reconciliation.assets import build_reconciliation
from pipelines.reconciliation.resources import ReconcileResource
from pipelines.reconciliation.schedules import reconciliation_job


def build_definitions(settings: Settings) -> Definitions:
    return Definitions(
        assets=[build_reconciliation()],
        jobs=[reconciliation_job],
        resources={"reconcile_config": ReconcileResource.of(settings)},
    )
