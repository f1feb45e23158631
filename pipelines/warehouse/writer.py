"""The one place that writes the warehouse.

Every write is one short transaction under the exclusive lock; the data to land is staged
beforehand (Parquet files written during the fetch), so the lock is never held while the network
is slow. After each write the read-only analyst copy is republished atomically.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.failpoints import failpoint
from pipelines.processes import process_alive
from pipelines.warehouse.connection import (
    WarehouseError,
    frame,
    open_for_read,
    open_for_write,
    transaction,
)
from pipelines.warehouse.lock import file_lock
from pipelines.warehouse.schema import LEDGER_ENTRIES, QUARANTINE


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


# The occurrence half of the identity rule (transforms/identify.py has the rule and the
# fingerprint): entries of one account and UTC day that share a fingerprint are numbered 1..n.
# They are identical, so the order only makes the numbering deterministic. It runs here because
# it needs whole days, and a sync stages whole days only as a set of files.
LANDING_MEMORY_LIMIT = "256MB"
IDENTIFIED_SQL = (
    "SELECT *, fingerprint || '-' || occurrence AS entry_id FROM ("
    "SELECT *, CAST(row_number() OVER (PARTITION BY account, entry_day, fingerprint "
    "ORDER BY window_start, page_number, page_position) AS INTEGER) AS occurrence "
    "FROM read_parquet({files}))"
)


def _paths_sql(paths: Sequence[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


class Warehouse:
    def __init__(
        self, path: Path, analyst_copy: Path | None = None, lock_timeout_s: float = 600.0
    ) -> None:
        self.path = Path(path)
        self.analyst_copy = Path(analyst_copy) if analyst_copy else default_analyst_copy(self.path)
        self.lock_timeout_s = lock_timeout_s

    def write(self):
        return open_for_write(self.path, self.lock_timeout_s)

    def read(self):
        return open_for_read(self.path, self.lock_timeout_s)

    def ensure(self) -> None:
        """Creates or upgrades the warehouse and publishes the analyst copy."""
        with self.write():
            pass
        self.publish_analyst_copy()

    # -- ledger ---------------------------------------------------------------------------------

    def land_ledger(self, landing: LedgerLanding) -> LandingResult:
        started = time.monotonic()
        entry_cols = ", ".join(c.name for c in LEDGER_ENTRIES.columns)
        quarantine_cols = ", ".join(c.name for c in QUARANTINE.columns)
        with self.write() as con, transaction(con):
            # Inserted rows stay in DuckDB's buffers up to its limit until COMMIT; a backfill's
            # landing need not hold more than a few groups of them (measured at 1M entries:
            # 45 MB less peak for 0.4 s more).
            con.execute(f"SET memory_limit = '{LANDING_MEMORY_LIMIT}'")
            replaced = _count(
                con,
                "SELECT count(*) FROM ledger_entries WHERE account = ? "
                "AND entry_day BETWEEN ? AND ?",
                [landing.account, landing.range_start, landing.range_end],
            )
            con.execute(
                "DELETE FROM ledger_entries WHERE account = ? AND entry_day BETWEEN ? AND ?",
                [landing.account, landing.range_start, landing.range_end],
            )
            con.execute(
                "DELETE FROM quarantine WHERE account = ? AND entry_day BETWEEN ? AND ?",
                [landing.account, landing.range_start, landing.range_end],
            )
            landed = 0
            # One INSERT per group of staged files: groups hold disjoint sets of whole days, so
            # numbering occurrences within a day never needs another group's rows, and DuckDB
            # holds one group at a time, not the range.
            for files in landing.entry_files:
                if files:
                    con.execute(
                        f"INSERT INTO ledger_entries ({entry_cols}) SELECT {entry_cols} FROM "
                        f"({IDENTIFIED_SQL.format(files=_paths_sql(files))})"
                    )
            if any(landing.entry_files):
                landed = _count(
                    con,
                    "SELECT count(*) FROM ledger_entries WHERE account = ? AND run_id = ?",
                    [landing.account, landing.run_id],
                )
            quarantined = 0
            if landing.quarantine_files:
                con.execute(
                    f"INSERT INTO quarantine ({quarantine_cols}) SELECT {quarantine_cols} "
                    f"FROM read_parquet({_paths_sql(landing.quarantine_files)})"
                )
                quarantined = _count(
                    con,
                    "SELECT count(*) FROM quarantine WHERE account = ? AND run_id = ?",
                    [landing.account, landing.run_id],
                )
            if landing.entries_fetched != landed + quarantined:
                raise InvariantBroken(
                    f"entries fetched ({landing.entries_fetched}) != landed ({landed}) + "
                    f"quarantined ({quarantined}); nothing was written"
                )
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
                    (
                        datetime.now(tz=landing.started_at.tzinfo) - landing.started_at
                    ).total_seconds(),
                ],
            )
            failpoint("transaction")
        return LandingResult(landed, quarantined, replaced, time.monotonic() - started)

    # -- snapshots ------------------------------------------------------------------------------

    def land_snapshot(
        self, table: str, account: str, content_hash: str, rows: Sequence[dict[str, Any]]
    ) -> bool:
        """Appends ``rows`` unless the latest stored snapshot has the same hash. True if stored."""
        if not rows:
            raise ValueError("a snapshot has at least one row")
        columns = list(rows[0])
        placeholders = ", ".join("?" for _ in columns)
        with self.write() as con, transaction(con):
            latest = con.execute(
                f"SELECT content_hash FROM {table} WHERE account = ? "
                "ORDER BY fetched_at DESC LIMIT 1",
                [account],
            ).fetchone()
            if latest and latest[0] == content_hash:
                return False
            con.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})",
                [[row[c] for c in columns] for row in rows],
            )
        return True

    def append(self, table: str, rows: Sequence[dict[str, Any]]) -> int:
        """Appends rows (dicts keyed by column) to a history table, in one transaction."""
        if not rows:
            return 0
        columns = list(rows[0])
        placeholders = ", ".join("?" for _ in columns)
        with self.write() as con, transaction(con):
            con.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})",
                [[row[c] for c in columns] for row in rows],
            )
        return len(rows)

    def replace_for_account(
        self,
        account: str,
        frames: dict[str, pl.DataFrame],
        appended: dict[str, Sequence[dict[str, Any]]] | None = None,
    ) -> None:
        """Replaces each table's rows of ``account`` with a frame, all in one transaction.

        Derived tables (breaks, daily balances, the enriched ledger) are rebuilt whole on each
        reconciliation: replacing them per account keeps other accounts untouched and a reader
        never sees a mix of two runs.
        """
        with self.write() as con, transaction(con):
            for table, frame in frames.items():
                con.execute(f"DELETE FROM {table} WHERE account = ?", [account])
                if frame.height:
                    columns = ", ".join(frame.columns)
                    con.register("incoming", frame.to_arrow())
                    con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM incoming")
                    con.unregister("incoming")
            for table, rows in (appended or {}).items():
                if rows:
                    names = list(rows[0])
                    marks = ", ".join("?" for _ in names)
                    con.executemany(
                        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})",
                        [[row[c] for c in names] for row in rows],
                    )

    @contextmanager
    def replacing_for_account(
        self, account: str, tables: Sequence[str], memory_limit: str | None = None
    ) -> Iterator[AccountReplacement]:
        """`replace_for_account` for results too large to hold at once: they arrive in parts.

        The account's rows of `tables` are deleted, then whatever the block inserts lands in the
        same transaction (all or nothing: an exception rolls everything back). The block reads
        through the same connection, since the exclusive lock shuts out any other.
        `memory_limit` (DuckDB's syntax, e.g. '128MB') lowers DuckDB's limit for this connection
        only: rows inserted in a transaction stay in DuckDB's buffers up to the limit, so a large
        transaction written in parts would otherwise grow to it.
        """
        with self.write() as con:
            if memory_limit is not None:
                if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]?i?B", memory_limit):
                    raise ValueError(f"not a DuckDB memory size: {memory_limit!r}")
                con.execute(f"SET memory_limit = '{memory_limit}'")
            with transaction(con):
                for table in tables:
                    con.execute(f"DELETE FROM {table} WHERE account = ?", [account])
                yield AccountReplacement(con)

    # -- analyst copy ---------------------------------------------------------------------------

    def publish_analyst_copy(self) -> Path:
        """Copy beside, then rename: a reader sees the old copy or the new one, never half."""
        if not self.path.exists():
            raise WarehouseError(f"no warehouse at {self.path} to publish")
        target = self.analyst_copy
        target.parent.mkdir(parents=True, exist_ok=True)
        for stale in target.parent.glob(f".{target.name}.*.partial"):  # left by a crash
            pid = stale.name.rsplit(".", 2)[-2]
            if not pid.isdigit() or not process_alive(int(pid)):  # not a live publisher's
                stale.unlink(missing_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
        with file_lock(self.path, exclusive=False, timeout_s=self.lock_timeout_s):
            shutil.copyfile(self.path, partial)
        with open(partial, "rb+") as handle:
            os.fsync(handle.fileno())
        failpoint("publish")
        os.replace(partial, target)
        _fsync_dir(target.parent)
        return target


class AccountReplacement:
    """Reads and inserts inside `Warehouse.replacing_for_account`'s transaction."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def read(self, sql: str, params: list[Any] | None = None) -> pl.DataFrame:
        return frame(self.con, sql, params)

    def insert(self, table: str, rows: pl.DataFrame) -> None:
        if rows.height:
            columns = ", ".join(rows.columns)
            # Read by name (a replacement scan), not register(): inside a transaction a
            # registered name keeps its data alive until COMMIT, even once unregistered. The
            # frame's own Arrow stream avoids a pyarrow copy of every slice.
            incoming = _ArrowStream(rows)  # noqa: F841
            self.con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM incoming")

    def append(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            names = list(rows[0])
            marks = ", ".join("?" for _ in names)
            self.con.executemany(
                f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})",
                [[row[c] for c in names] for row in rows],
            )


class _ArrowStream:
    """A polars frame as an Arrow PyCapsule stream, which DuckDB scans without pyarrow."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.frame.__arrow_c_stream__(requested_schema)


def default_analyst_copy(path: Path) -> Path:
    return path.with_name(f"{path.stem}.analyst{path.suffix or '.duckdb'}")


def _count(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> int:
    row = con.execute(sql, params).fetchone()
    return int(row[0]) if row else 0


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
