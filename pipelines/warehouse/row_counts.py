"""How many rows the warehouse holds, per table and per ledger day, for Dagster's metadata.

A materialization says what the table holds after it (``dagster/row_count``), and a ledger
partition says what its own day holds, never the run's totals (a backfill of a month used to
show the month's 6,177 entries on each of its 31 days). Read through the read-only door, after
the write, so the figures are the warehouse's, not the writer's intentions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from pipelines.warehouse.read import count, open_read_only, rows, table_names


@dataclass(frozen=True)
class DayRows:
    """One UTC day of the accounts synced: entries landed and entries quarantined."""

    entries: int = 0
    quarantined: int = 0


def table_rows(path: Path, tables: Iterable[str], *, lock_timeout_s: float) -> dict[str, int]:
    """Rows of each table that exists (all accounts: the asset is the table)."""
    with open_read_only(path, lock_timeout_s) as con:
        present = table_names(con)
        return {t: count(con, f"SELECT count(*) FROM {t}") for t in tables if t in present}


def account_rows(
    path: Path, tables: Iterable[str], *, lock_timeout_s: float
) -> dict[str, dict[str, int]]:
    """Rows of each table that exists, per account: for assets that are one account's part of
    a table (the reconciliation's, with an accounts file)."""
    with open_read_only(path, lock_timeout_s) as con:
        present = table_names(con)
        return {
            t: {
                str(a): int(n)
                for a, n in rows(con, f"SELECT account, count(*) FROM {t} GROUP BY 1")
            }
            for t in tables
            if t in present
        }


def ledger_days(
    path: Path, accounts: str | Sequence[str], first: date, last: date, *, lock_timeout_s: float
) -> dict[date, DayRows]:
    """Each day of ``first..last`` with what the accounts' ledgers and quarantine hold of it,
    summed over the accounts: a day's partition is every account's day."""
    names = [accounts] if isinstance(accounts, str) else list(accounts)
    sql = (
        "SELECT entry_day, count(*) FROM {} WHERE account IN (SELECT unnest(?::VARCHAR[])) "
        "AND entry_day BETWEEN ? AND ? GROUP BY entry_day"
    )
    with open_read_only(path, lock_timeout_s) as con:
        entries = dict(rows(con, sql.format("ledger_entries"), [names, first, last]))
        quarantined = dict(rows(con, sql.format("quarantine"), [names, first, last]))
    return {
        day: DayRows(int(entries.get(day, 0)), int(quarantined.get(day, 0)))
        for day in {*entries, *quarantined}
    }
