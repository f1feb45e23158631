"""Ledger partitions: one per UTC day, from where the company's ledger begins, through today.

Where it begins is CREDITLENS_LEDGER_START when set (an override), else what history discovery
recorded, read from the analyst copy: a file that is only ever replaced whole, so the code
location (and every run worker that loads it) reads it without waiting on the warehouse's lock.
Before any discovery, the partitions reach back to the start of the year of the history limit,
so a backfill of them all from the UI misses nothing either.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from dagster import DailyPartitionsDefinition

from pipelines.settings import Settings
from pipelines.warehouse.read import WarehouseError, recorded_first_days


def ledger_partitions(start: date) -> DailyPartitionsDefinition:
    # end_offset=1: today's partition exists, so the daily sync can read today's entries so far.
    return DailyPartitionsDefinition(
        start_date=start.isoformat(), timezone="UTC", end_offset=1, fmt="%Y-%m-%d"
    )


def ledger_start_day(settings: Settings, today: date | None = None) -> date:
    """The first partition: the override, else the earliest discovered first day of the
    configured accounts, else the start of the year the history limit reaches back to."""
    if settings.ledger_start is not None:
        return settings.ledger_start
    today = today or datetime.now(UTC).date()
    found = list(_recorded(settings).values())
    if found:
        return min(min(found), today)
    reach = max(a.history_limit for a in settings.accounts)
    return (today - timedelta(days=reach)).replace(month=1, day=1)


def _recorded(settings: Settings) -> dict[str, date]:
    """Every account's discovered first day, in one read of the analyst copy."""
    copy = settings.open_warehouse().analyst_copy
    try:
        return recorded_first_days(
            copy, [a.name for a in settings.accounts], lock_timeout_s=settings.lock_timeout_s
        )
    except WarehouseError:
        return {}
