"""Ledger partitions: one per UTC day, from a configurable start, through today."""

from __future__ import annotations

from datetime import date

from dagster import DailyPartitionsDefinition


def ledger_partitions(start: date) -> DailyPartitionsDefinition:
    # end_offset=1: today's partition exists, so the daily sync can read today's entries so far.
    return DailyPartitionsDefinition(
        start_date=start.isoformat(), timezone="UTC", end_offset=1, fmt="%Y-%m-%d"
    )
