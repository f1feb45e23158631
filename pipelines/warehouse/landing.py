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
from pipelines.warehouse.one_commit import (
    AccountLeftOut,
    shared_statements,
    write_together_in_one_commit,
)
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
# Entries per landing INSERT (a staged group's size, pipelines/ledger/staging.py; several small
# accounts together): DuckDB's working set, not the range's.
LANDING_ROWS = 100_000


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
    """Every account's staged days in ONE transaction (pipelines/warehouse/one_commit.py) and in
    a few statements for all of them: per account, what it landed, or why it was left out of the
    commit (the others land)."""
    landed = write_together_in_one_commit(
        path, lock_timeout_s, landings, _land_all, key=lambda x: x.account,
        setup=lambda con: limit_memory(con, LANDING_MEMORY_LIMIT), failpoint_name="transaction",
    )  # fmt: skip
    return {str(account): result for account, result in landed.items()}


# The accounts of one landing and their replaced days, as the rows ``d`` its statements join.
_DAYS = "landing_days"
# The span of every account's days is given again as constants: DuckDB skips the row groups
# outside it, where the join alone reads the whole table.
_IN_DAYS = (
    "{t}.entry_day BETWEEN ? AND ? AND {t}.account = d.account "
    "AND {t}.entry_day BETWEEN d.range_start AND d.range_end"
)


def _land_all(
    con: duckdb.DuckDBPyConnection, landings: Sequence[LedgerLanding]
) -> dict[object, LandingResult]:
    """Replaces every account's days inside the open transaction, each statement over all the
    accounts (500 accounts' daily syncs were 3,500 statements and as many scans of the ledger);
    the invariant fetched = landed + quarantined is then checked per account, and an account
    breaking it is left out of the commit (``AccountLeftOut``), the others landed again."""
    started = time.monotonic()
    with shared_statements():
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {_DAYS} AS SELECT unnest(?::VARCHAR[]) AS account, "
            "unnest(?::VARCHAR[]) AS run_id, unnest(?::DATE[]) AS range_start, "
            "unnest(?::DATE[]) AS range_end",
            [[x.account for x in landings], [x.run_id for x in landings],
             [x.range_start for x in landings], [x.range_end for x in landings]],
        )  # fmt: skip
        span = [min(x.range_start for x in landings), max(x.range_end for x in landings)]
        replaced = _counts(
            con,
            f"SELECT d.account, count(*) FROM ledger_entries JOIN {_DAYS} d "
            f"ON {_IN_DAYS.format(t='ledger_entries')} GROUP BY d.account",
            span,
        )
        for table in ("ledger_entries", "quarantine"):
            where = _IN_DAYS.format(t=table)
            con.execute(f"DELETE FROM {table} USING {_DAYS} d WHERE {where}", span)
        _insert_entries(con, landings)
        _insert_quarantine(con, landings)
        landed = _counts(
            con,
            f"SELECT d.account, count(*) FROM ledger_entries JOIN {_DAYS} d "
            "ON ledger_entries.entry_day BETWEEN ? AND ? AND ledger_entries.account = d.account "
            "AND ledger_entries.run_id = d.run_id GROUP BY d.account",
            span,
        )
        quarantined = _counts(
            con,
            f"SELECT d.account, count(*) FROM quarantine JOIN {_DAYS} d "
            "ON quarantine.account = d.account AND quarantine.run_id = d.run_id "
            "GROUP BY d.account",
        )
    for landing in landings:
        got = landed.get(landing.account, 0), quarantined.get(landing.account, 0)
        if landing.entries_fetched != sum(got):
            broken = InvariantBroken(
                f"entries fetched ({landing.entries_fetched}) != landed ({got[0]}) + "
                f"quarantined ({got[1]}); nothing was written"
            )
            raise AccountLeftOut(landing.account, broken) from broken
    _record_runs(con, landings, landed, quarantined)
    con.execute(f"DROP TABLE {_DAYS}")
    took = time.monotonic() - started
    return {
        x.account: LandingResult(
            landed.get(x.account, 0), quarantined.get(x.account, 0),
            replaced.get(x.account, 0), took,
        )
        for x in landings
    }  # fmt: skip


def _counts(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[object] = ()
) -> dict[str, int]:
    return {str(account): int(n) for account, n in con.execute(sql, list(params)).fetchall()}


def _insert_entries(con: duckdb.DuckDBPyConnection, landings: Sequence[LedgerLanding]) -> None:
    """One INSERT per batch of about ``LANDING_ROWS`` entries: a daily sync's accounts together,
    a large account's groups one at a time, as it lands alone (DuckDB's working set stays one
    group's). Groups of one account hold disjoint whole days, so numbering occurrences within a
    day never needs another batch's rows."""
    columns = ", ".join(c.name for c in LEDGER_ENTRIES.columns)
    for files in _batches(landings):
        identified = identified_sql(f"read_parquet({paths_sql(files)})")
        con.execute(f"INSERT INTO ledger_entries ({columns}) SELECT {columns} FROM ({identified})")


def _batches(landings: Sequence[LedgerLanding]) -> list[list[Path]]:
    batches: list[list[Path]] = []
    small: list[Path] = []
    rows = 0
    for landing in landings:
        groups = [g for g in landing.entry_files if g]
        if len(groups) == 1 and landing.entries_fetched <= LANDING_ROWS:
            if small and rows + landing.entries_fetched > LANDING_ROWS:
                batches.append(small)
                small, rows = [], 0
            small.extend(groups[0])
            rows += landing.entries_fetched
        else:
            batches.extend(list(g) for g in groups)
    return [*batches, small] if small else batches


def _insert_quarantine(con: duckdb.DuckDBPyConnection, landings: Sequence[LedgerLanding]) -> None:
    """Names the staged rejects, removes every earlier row of each, and inserts them.

    Days alone do not make the quarantine exactly once: an entry whose createdAt cannot place it
    is filed under its window's first day, and overlapping syncs start their windows on
    different days. Its received text is the same, so is its fingerprint; replacing every row
    of a fingerprint read again in its account, whatever its day, keeps one copy of it.
    """
    files = [f for x in landings for f in x.quarantine_files]
    if not files:
        return
    columns = ", ".join(c.name for c in QUARANTINE.columns)
    staged = quarantine_identified_sql(f"read_parquet({paths_sql(files)})")
    con.execute(f"CREATE TEMP TABLE staged_quarantine AS SELECT {columns} FROM ({staged})")
    con.execute(
        "DELETE FROM quarantine USING staged_quarantine s "
        "WHERE quarantine.account = s.account AND quarantine.fingerprint = s.fingerprint"
    )
    con.execute(f"INSERT INTO quarantine ({columns}) SELECT {columns} FROM staged_quarantine")
    con.execute("DROP TABLE staged_quarantine")


# sync_runs' columns in order, as the typed lists one INSERT unnests (finished_at: the commit's
# transaction time, ``now()``).
_RUN_COLUMNS = (
    ("account", "VARCHAR"), ("run_id", "VARCHAR"), ("started_at", "TIMESTAMPTZ"),
    ("finished_at", None), ("range_start", "DATE"), ("range_end", "DATE"),
    ("windows", "INTEGER"), ("pages", "INTEGER"), ("window_restarts", "INTEGER"),
    ("requests", "INTEGER"), ("retries", "INTEGER"), ("entries_fetched", "BIGINT"),
    ("entries_landed", "BIGINT"), ("entries_quarantined", "BIGINT"), ("duration_s", "DOUBLE"),
)  # fmt: skip


def _record_runs(
    con: duckdb.DuckDBPyConnection,
    landings: Sequence[LedgerLanding],
    landed: dict[str, int],
    quarantined: dict[str, int],
) -> None:
    """One ``sync_runs`` row per account, in one statement."""
    rows = [
        (
            x.account, x.run_id, x.started_at, x.range_start, x.range_end, x.windows, x.pages,
            x.window_restarts, x.requests, x.retries, x.entries_fetched,
            landed.get(x.account, 0), quarantined.get(x.account, 0),
            (datetime.now(tz=x.started_at.tzinfo) - x.started_at).total_seconds(),
        )
        for x in landings
    ]  # fmt: skip
    selected = ", ".join(
        "now()" if kind is None else f"unnest(?::{kind}[])" for _, kind in _RUN_COLUMNS
    )
    names = ", ".join(name for name, _ in _RUN_COLUMNS)
    con.execute(
        f"INSERT INTO sync_runs ({names}) SELECT {selected}",
        [list(column) for column in zip(*rows, strict=True)],
    )
