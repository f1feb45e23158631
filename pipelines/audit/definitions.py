"""The key audit domain: its asset, its weekly job and its settings resource."""

from __future__ import annotations

from dagster import Definitions

from pipelines.audit.assets import key_audit
from pipelines.audit.resources import KeyAuditResource
from pipelines.audit.schedules import audit_job, weekly_key_audit
from pipelines.config.settings import Settings


def build_definitions(settings: Settings) -> Definitions:
    return Definitions(
        assets=[key_audit],
        jobs=[audit_job],
        schedules=[weekly_key_audit],
        resources={"key_audit_config": KeyAuditResource.of(settings)},
    )
