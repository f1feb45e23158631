"""The snapshots domain: one asset per registry endpoint, and the job that fetches them all."""

from __future__ import annotations

from dagster import Definitions

from pipelines.config.settings import Settings
from pipelines.snapshots.assets import SNAPSHOT_ASSETS
from pipelines.snapshots.schedules import snapshot_job


def build_definitions(settings: Settings) -> Definitions:
    """Uses the shared platform_api and warehouse resources; nothing of its own to configure."""
    return Definitions(assets=SNAPSHOT_ASSETS, jobs=[snapshot_job])
