"""Landing a ledger sync: whole UTC days of every account, replaced in one transaction.

The data to land is staged beforehand (Parquet files written during the fetch), so the exclusive
lock is never held while the network is slow, and every account of a sync lands in the same
transaction (one lock, one COMMIT, one CHECKPOINT, not one per account). The invariant
fetched = landed + quarantined is checked per account inside it: an account breaking it is left
out of the commit and nothing of it is written; the other accounts land.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import duckdb

from pipelines.warehouse.instances import limit_memory
from pipelines.warehouse.one_commit import write_each_in_one_commit
from pipelines.warehouse.rows import count
from pipelines.warehouse.schema import LEDGER_ENTRIES, QUARANTINE
from transforms.identify import identified_sql, quarantine_identified_sql


@dataclass(frozen=True)
class LedgerLanding:
    """What one ledger sync lands: whole UTC days of one account."""

    account: str
    run_id: str
    range_start: date
    range_end: date
    entry_files: Sequence[Sequence[Path]]  # staged files in groups of disjoint whole days
    quarantine_files: Sequence[Path]
    started_at: datetime
    windows: int
    pages: int
    window_restarts: int
    requests: int
    retries: int
    entries_fetched: int


@dataclass(frozen=True)
class LandingResult:
    landed: int
    quarantined: int
    replaced: int
    duration_s: float


class InvariantBroken(RuntimeError):
    """fetched != landed + quarantined: the transaction is rolled back, nothing changes."""


# Inserted rows stay in DuckDB's buffers up to its limit until COMMIT; a backfill's landing need
# not hold more than a few groups of them (measured at 1M entries: 45 MB less peak for 0.4 s more).
LANDING_MEMORY_LIMIT = "256MB"


def paths_sql(paths: Sequence[Path]) -> str:
    """A DuckDB list literal of file paths, quoted."""
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def land_ledger(path: Path, lock_timeout_s: float, landing: LedgerLanding) -> LandingResult:
    """One account's landing: ``land_ledgers`` of one, its failure raised."""
    result = land_ledgers(path, lock_timeout_s, [landing])[landing.account]
    if isinstance(result, BaseException):
        raise result
    return result


def land_ledgers(
    path: Path, lock_timeout_s: float, landings: Sequence[LedgerLanding]
) -> dict[str, LandingResult | BaseException]:
    """Every account's staged days in ONE transaction (pipelines/warehouse/one_commit.py): per
    account, what it landed, or why it was left out of the commit (the others land)."""
    landed = write_each_in_one_commit(
        path,
        lock_timeout_s,
        landings,
        _land_one,
        key=lambda landing: landing.account,
        setup=lambda con: limit_memory(con, LANDING_MEMORY_LIMIT),
        failpoint_name="transaction",
    )
    return {str(account): result for account, result in landed.items()}


def _land_one(con: duckdb.DuckDBPyConnection, landing: LedgerLanding) -> LandingResult:
    """Replaces the account's days inside the open transaction; the invariant fetched = landed +
    quarantined is checked here, and an account breaking it is left out of the commit."""
    started = time.monotonic()
    days = [landing.account, landing.range_start, landing.range_end]
    replaced = count(
        con,
        "SELECT count(*) FROM ledger_entries WHERE account = ? AND entry_day BETWEEN ? AND ?",
        days,
    )
    for table in ("ledger_entries", "quarantine"):
        con.execute(f"DELETE FROM {table} WHERE account = ? AND entry_day BETWEEN ? AND ?", days)
    landed = _insert_entries(con, landing)
    quarantined = _insert_quarantine(con, landing)
    if landing.entries_fetched != landed + quarantined:
        raise InvariantBroken(
            f"entries fetched ({landing.entries_fetched}) != landed ({landed}) + "
            f"quarantined ({quarantined}); nothing was written"
        )
    _record_run(con, landing, landed, quarantined)
    return LandingResult(landed, quarantined, replaced, time.monotonic() - started)


def _insert_entries(con: duckdb.DuckDBPyConnection, landing: LedgerLanding) -> int:
    """One INSERT per group of staged files.

    Groups hold disjoint sets of whole days, so numbering occurrences within a day never needs
    another group's rows, and DuckDB holds one group at a time, not the range.
    """
    if not any(landing.entry_files):
        return 0
    columns = ", ".join(c.name for c in LEDGER_ENTRIES.columns)
    for files in landing.entry_files:
        if files:
            identified = identified_sql(f"read_parquet({paths_sql(files)})")
            con.execute(
                f"INSERT INTO ledger_entries ({columns}) SELECT {columns} FROM ({identified})"
            )
    return count(
        con,
        "SELECT count(*) FROM ledger_entries WHERE account = ? AND run_id = ?",
        [landing.account, landing.run_id],
    )


def _insert_quarantine(con: duckdb.DuckDBPyConnection, landing: LedgerLanding) -> int:
    """Names the staged rejects, removes every earlier row of each, and inserts them.

    Days alone do not make the quarantine exactly once: an entry whose createdAt cannot place it
    is filed under its window's first day, and overlapping syncs start their windows on
    different days. Its received text is the same, so is its fingerprint; replacing every row
    of a fingerprint read again, whatever its day, keeps one copy of it.
    """
    if not landing.quarantine_files:
        return 0
    columns = ", ".join(c.name for c in QUARANTINE.columns)
    staged = quarantine_identified_sql(f"read_parquet({paths_sql(landing.quarantine_files)})")
    con.execute(f"CREATE TEMP TABLE staged_quarantine AS SELECT {columns} FROM ({staged})")
    con.execute(
        "DELETE FROM quarantine WHERE account = ? AND fingerprint IN "
        "(SELECT fingerprint FROM staged_quarantine)",
        [landing.account],
    )
    con.execute(f"INSERT INTO quarantine ({columns}) SELECT {columns} FROM staged_quarantine")
    con.execute("DROP TABLE staged_quarantine")
    return count(
        con,
        "SELECT count(*) FROM quarantine WHERE account = ? AND run_id = ?",
        [landing.account, landing.run_id],
    )


def _record_run(
    con: duckdb.DuckDBPyConnection, landing: LedgerLanding, landed: int, quarantined: int
) -> None:
    elapsed = datetime.now(tz=landing.started_at.tzinfo) - landing.started_at
    con.execute(
        "INSERT INTO sync_runs VALUES (?, ?, ?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            landing.account,
            landing.run_id,
            landing.started_at,
            landing.range_start,
            landing.range_end,
            landing.windows,
            landing.pages,
            landing.window_restarts,
            landing.requests,
            landing.retries,
            landing.entries_fetched,
            landed,
            quarantined,
            elapsed.total_seconds(),
        ],
    )
