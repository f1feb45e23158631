"""One writer at a time across processes, and a word about it whenever someone has to wait.

DuckDB lets one process write a file or many read it, never both. Dagster's multiprocess
executor runs assets in separate processes, so every open of the warehouse goes through this
lock: exclusive to write, shared to read, held only for the transaction.

Waiting on it is never silent. A writer records who it is (pid, host, Dagster run, what it
writes, since when) in the lock file while it holds the lock, so whoever waits can say on whom:
at the start of the wait, every ``REPORT_EVERY_S`` seconds, and when the lock is finally taken.
Those reports go to the listeners of the waiting context (a Dagster step logs them, the CLI
prints them) and are added to any ``measured_waits`` clock, so a sync can tell the time it spent
waiting from the time it spent working.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pipelines.runtime.processes import process_alive
from pipelines.warehouse.errors import WarehouseError
from pipelines.warehouse.lake import Lake, lake_at, shown

log = logging.getLogger(__name__)

# How often a long wait is reported again; the first report comes as soon as the wait starts.
REPORT_EVERY_S = 15.0
POLL_S = 0.05


class WarehouseBusy(RuntimeError):
    """The lock stayed taken past the timeout; the message says by whom, when that is known."""


@dataclass(frozen=True)
class Holder:
    """Who holds the warehouse to write, as it recorded itself in the lock file."""

    pid: int
    host: str
    run_id: str  # the Dagster run, "" outside one
    what: str  # what it writes (an asset), "" when not said
    since: datetime

    def describe(self, now: datetime | None = None) -> str:
        held = ((now or datetime.now(UTC)) - self.since).total_seconds()
        run = f"run {self.run_id}" if self.run_id else "a process outside Dagster"
        what = f" ({self.what})" if self.what else ""
        since = self.since.strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"{run}{what}, pid {self.pid} on {self.host}, since {since} ({held:.0f} s)"

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "pid": self.pid,
                "host": self.host,
                "run_id": self.run_id,
                "what": self.what,
                "since": self.since.isoformat(),
            }
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Holder | None:
        """None for an empty record (no writer, or a reader holds the lock) or a torn one."""
        try:
            raw = json.loads(data.decode())
            return cls(
                pid=int(raw["pid"]),
                host=str(raw["host"]),
                run_id=str(raw.get("run_id", "")),
                what=str(raw.get("what", "")),
                since=datetime.fromisoformat(raw["since"]),
            )
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None


@dataclass(frozen=True)
class LockWait:
    """One report of a wait: its start (``waited_s`` near 0), a reminder, or its end."""

    warehouse: Path
    holder: Holder | None
    waited_s: float
    timeout_s: float
    acquired: bool

    def sentence(self) -> str:
        """One line for a log, a progress display or a step's event log."""
        where = shown(self.warehouse)
        if self.acquired:
            return f"got the warehouse lock after waiting {self.waited_s:.1f} s ({where})"
        who = self.holder.describe() if self.holder else "a reader (a report, a check, a query)"
        if self.waited_s < REPORT_EVERY_S:
            return (
                f"waiting for the warehouse lock ({where}): held by {who}; "
                f"giving up after {self.timeout_s:g} s"
            )
        return (
            f"still waiting for the warehouse lock after {self.waited_s:.0f} s "
            f"(of {self.timeout_s:g} s): held by {who}"
        )


WaitListener = Callable[[LockWait], None]

_holder_run: ContextVar[tuple[str, str]] = ContextVar("warehouse_holder", default=("", ""))
_listeners: ContextVar[tuple[WaitListener, ...]] = ContextVar("warehouse_waits", default=())
_clocks: ContextVar[tuple[WaitClock, ...]] = ContextVar("warehouse_wait_clocks", default=())


@contextmanager
def holding_for(run_id: str, what: str = "") -> Iterator[None]:
    """Locks taken in this block are recorded as held by ``run_id`` writing ``what``."""
    token = _holder_run.set((run_id, what))
    try:
        yield
    finally:
        _holder_run.reset(token)


@contextmanager
def reporting_waits(listener: WaitListener) -> Iterator[None]:
    """Waits on the lock in this block are reported to ``listener`` (besides any others)."""
    token = _listeners.set((*_listeners.get(), listener))
    try:
        yield
    finally:
        _listeners.reset(token)


@dataclass
class WaitClock:
    """Seconds spent waiting for the lock in a block, apart from the work done in it."""

    seconds: float = 0.0
    waits: int = 0

    def add(self, wait: LockWait) -> None:
        if wait.acquired:
            self.seconds += wait.waited_s
            self.waits += 1


@contextmanager
def measured_waits() -> Iterator[WaitClock]:
    """Adds up the waits of this block (nested blocks count in each enclosing clock)."""
    clock = WaitClock()
    token = _clocks.set((*_clocks.get(), clock))
    try:
        yield clock
    finally:
        _clocks.reset(token)


def _report(wait: LockWait) -> None:
    for clock in _clocks.get():
        clock.add(wait)
    listeners = _listeners.get()
    for listener in listeners:
        listener(wait)
    if not listeners:  # a command outside a Dagster step: the log still says it
        log.warning(wait.sentence())


def _holder(fd: int) -> Holder | None:
    """The writer recorded in the lock file; None when there is none, or when it is a writer of
    this host that died without clearing its record (a reader holds the lock then)."""
    try:
        holder = Holder.from_json(os.pread(fd, 4096, 0))
    except OSError:
        return None
    if holder and holder.host == socket.gethostname() and not process_alive(holder.pid):
        return None
    return holder


def _me() -> Holder:
    run_id, what = _holder_run.get()
    return Holder(os.getpid(), socket.gethostname(), run_id, what, datetime.now(UTC))


def _record_holder(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, _me().to_json(), 0)


def _acquire(fd: int, path: Path, mode: int, timeout_s: float) -> None:
    def taken() -> bool:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    _poll(path, taken, lambda: _holder(fd), timeout_s, timeout_s)


@contextmanager
def file_lock(path: Path, *, exclusive: bool, timeout_s: float) -> Iterator[None]:
    """On a lake (pipelines/warehouse/lake.py) a reader takes no lock (each read sees one of the
    lake's snapshots) and a writer takes this host's file lock, then the lake's writer lock,
    which writers on every host take in turn."""
    lake = lake_at(path)
    if lake is None:
        with _local_lock(path, exclusive=exclusive, timeout_s=timeout_s):
            yield
    elif exclusive:
        started = time.monotonic()
        with _local_lock(path, exclusive=True, timeout_s=timeout_s):
            left = max(timeout_s - (time.monotonic() - started), 0.0)
            with _lake_lock(path, lake, timeout_s=left, reported_timeout_s=timeout_s):
                yield
    else:
        yield


# One advisory lock of the catalog's database for every creditlens writer of the lake; the
# holder's record (Holder.to_json) in a table beside DuckLake's, for whoever has to wait.
LAKE_LOCK_KEY = 0x637265646C656E73  # "credlens"
LAKE_HOLDER_TABLE = "creditlens_writer"


@contextmanager
def _lake_lock(
    path: Path, lake: Lake, *, timeout_s: float, reported_timeout_s: float
) -> Iterator[None]:
    import psycopg2  # only a lake needs it, and its import costs every other command

    try:
        conn = psycopg2.connect(lake.conninfo, application_name="creditlens writer")
    except psycopg2.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WarehouseError(f"cannot reach the catalog of {lake.location}: {first}") from None
    conn.autocommit = True
    try:
        cur = conn.cursor()

        def taken() -> bool:
            cur.execute("SELECT pg_try_advisory_lock(%s)", (LAKE_LOCK_KEY,))
            row = cur.fetchone()
            return bool(row and row[0])

        def holder() -> Holder | None:
            try:
                cur.execute(
                    f"SELECT holder FROM {LAKE_HOLDER_TABLE} WHERE lock_key = %s", (LAKE_LOCK_KEY,)
                )
            except psycopg2.Error:
                return None  # no writer has recorded itself yet
            row = cur.fetchone()
            return Holder.from_json(row[0].encode()) if row else None

        _poll(path, taken, holder, timeout_s, reported_timeout_s)
        cur.execute(
            f"CREATE TABLE IF NOT EXISTS {LAKE_HOLDER_TABLE} (lock_key BIGINT PRIMARY KEY, "
            "holder TEXT NOT NULL)"
        )
        cur.execute(
            f"INSERT INTO {LAKE_HOLDER_TABLE} VALUES (%s, %s) ON CONFLICT (lock_key) "
            "DO UPDATE SET holder = excluded.holder",
            (LAKE_LOCK_KEY, _me().to_json().decode()),
        )
        try:
            yield
        finally:
            cur.execute(f"DELETE FROM {LAKE_HOLDER_TABLE} WHERE lock_key = %s", (LAKE_LOCK_KEY,))
            cur.execute("SELECT pg_advisory_unlock(%s)", (LAKE_LOCK_KEY,))
    finally:
        conn.close()  # a writer that dies ends its session: PostgreSQL releases the lock


def _poll(
    path: Path,
    taken: Callable[[], bool],
    holder: Callable[[], Holder | None],
    timeout_s: float,
    reported_timeout_s: float,
) -> None:
    """Tries ``taken`` until it succeeds, reporting the wait as the file lock does."""
    if taken():
        return
    started = time.monotonic()
    reported_at = started
    _report(LockWait(path, holder(), 0.0, reported_timeout_s, acquired=False))
    while not taken():
        time.sleep(POLL_S)
        now = time.monotonic()
        if now - started > timeout_s:
            found = holder()
            by = f" by {found.describe()}" if found else ""
            raise WarehouseBusy(
                f"the warehouse {shown(path)} stayed locked{by} for {reported_timeout_s:g}s"
            ) from None
        if now - reported_at >= REPORT_EVERY_S:
            reported_at = now
            _report(LockWait(path, holder(), now - started, reported_timeout_s, acquired=False))
    _report(LockWait(path, None, time.monotonic() - started, reported_timeout_s, acquired=True))


@contextmanager
def _local_lock(path: Path, *, exclusive: bool, timeout_s: float) -> Iterator[None]:
    lock_path = path.with_name(path.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    try:
        _acquire(fd, path, mode, timeout_s)
        if exclusive:
            _record_holder(fd)
        try:
            yield
        finally:
            if exclusive:  # the next waiter must not read a writer that has gone
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)
