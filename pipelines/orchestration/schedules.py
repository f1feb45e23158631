"""The clock of every creditlens schedule: UTC.

The ledger's partitions are UTC days and every schedule's description gives UTC times, so a
schedule on any other clock would sync, refresh or report on days that are not the ones it says.
"""

from __future__ import annotations

from dagster import ScheduleDefinition
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

SCHEDULE_TIMEZONE = "UTC"


def utc_schedule(
    name: str, job: UnresolvedAssetJobDefinition, cron: str, description: str
) -> ScheduleDefinition:
    """``job`` run at ``cron``, read on the UTC clock."""
    return ScheduleDefinition(
        name=name,
        job=job,
        cron_schedule=cron,
        execution_timezone=SCHEDULE_TIMEZONE,
        description=description,
    )
