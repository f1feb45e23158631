"""Ledger partitions: one per UTC day, from where the company's ledger begins, through today.

Where it begins is CREDITLENS_LEDGER_START when set (an override), else what history discovery
recorded, read from the analyst copy: a file that is only ever replaced whole, so the code
location (and every run worker that loads it) reads it without waiting on the warehouse's lock.
Before any discovery, the partitions reach back to the start of the year of the history limit,
so a backfill of them all from the UI misses nothing either. Days a sync covered before that
first day (``--since`` earlier than the first entry) are partitions too.
"""

from __future__ import annotations

import functools
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from dagster import DailyPartitionsDefinition

from pipelines.config.settings import Settings
from pipelines.warehouse.analyst_parts import file_identity
from pipelines.warehouse.read import WarehouseError, first_days


def ledger_partitions(start: date) -> DailyPartitionsDefinition:
    # end_offset=1: today's partition exists, so the daily sync can read today's entries so far.
    return DailyPartitionsDefinition(
        start_date=start.isoformat(), timezone="UTC", end_offset=1, fmt="%Y-%m-%d"
    )


def ledger_start_day(settings: Settings, today: date | None = None) -> date:
    """The first partition: the override, else the earliest discovered first day of the
    configured accounts, else the start of the year the history limit reaches back to; earlier
    still when a sync covered days before it (a ``--since`` before the ledger's first day), so
    every synced day is a partition."""
    today = today or datetime.now(UTC).date()
    found, synced = _recorded(settings)
    if settings.ledger_start is not None:
        start = settings.ledger_start
    elif found:
        start = min(min(found.values()), today)
    else:
        reach = max(a.history_limit for a in settings.accounts)
        start = (today - timedelta(days=reach)).replace(month=1, day=1)
    return min([start, *synced.values()])


def covering(settings: Settings, first: date) -> Settings:
    """Settings whose partitions reach back to ``first``: a sync may start before the ledger's
    first day, and Dagster runs only over partitions that exist. Once synced, those days stay
    partitions (``ledger_start_day`` reads them from ``sync_runs``)."""
    if first >= ledger_start_day(settings):
        return settings
    return settings.model_copy(update={"ledger_start": first})


def _recorded(settings: Settings) -> tuple[dict[str, date], dict[str, date]]:
    """Every account's discovered first day and first synced day, read from the analyst copy."""
    copy = settings.open_warehouse().analyst_copy
    names = tuple(a.name for a in settings.accounts)
    try:
        found, synced = _read(copy, file_identity(copy), names, settings.lock_timeout_s)
    except WarehouseError:  # not kept: the next build asks again
        return {}, {}
    return dict(found), dict(synced)


@functools.lru_cache(maxsize=16)
def _read(
    copy: Path, identity: str, names: tuple[str, ...], lock_timeout_s: float
) -> tuple[dict[str, date], dict[str, date]]:
    """Asked five times a sync (each build of the definitions, twice each, and ``covering``):
    kept by the copy's file identity, since a publish replaces the copy whole and never changes
    it in place, so a new publish is a new key. Copied by the caller: never changed here."""
    return first_days(copy, list(names), lock_timeout_s=lock_timeout_s)
