"""The snapshots domain: one asset per registry endpoint, the job that fetches them all, and the
job of a CLI sync, which fetches them after the ledger in the same run."""

from __future__ import annotations

from dagster import Definitions

from pipelines.config.settings import Settings
from pipelines.snapshots.assets import SNAPSHOT_ASSETS
from pipelines.snapshots.schedules import snapshot_job, sync_job


def build_definitions(settings: Settings) -> Definitions:
    """Uses the shared platform_api and warehouse resources; nothing of its own to configure."""
    return Definitions(assets=SNAPSHOT_ASSETS, jobs=[snapshot_job, sync_job])
