"""The key audit's job, run weekly."""

from dagster import AssetSelection, define_asset_job

from pipelines.audit.assets import key_audit
from pipelines.orchestration.schedules import utc_schedule

audit_job = define_asset_job(
    "key_audit_run", selection=AssetSelection.assets(key_audit), description="Run the key audit."
)

weekly_key_audit = utc_schedule("weekly_key_audit", audit_job, "0 6 * * 1", "Mondays at 06:00 UTC.")
