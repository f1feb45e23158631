"""The clock of every creditlens schedule: UTC.

The ledger's partitions are UTC days and every schedule's description gives UTC times, so a
schedule on any other clock would sync, refresh or report on days that are not the ones it says.
``AssetJob`` is the type of the asset jobs they run.
"""

from __future__ import annotations

from typing import TypeAlias

from dagster import ScheduleDefinition

# Only the type of what Dagster's public define_asset_job returns, which Dagster does not export.
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

SCHEDULE_TIMEZONE = "UTC"
# An asset job as ``define_asset_job`` returns it, before Definitions resolve its selection.
AssetJob: TypeAlias = UnresolvedAssetJobDefinition


def utc_schedule(name: str, job: AssetJob, cron: str, description: str) -> ScheduleDefinition:
    """``job`` run at ``cron``, read on the UTC clock."""
    return ScheduleDefinition(
        name=name,
        job=job,
        cron_schedule=cron,
        execution_timezone=SCHEDULE_TIMEZONE,
        description=description,
    )
