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
        if self.acquired:
            return f"got the warehouse lock after waiting {self.waited_s:.1f} s ({self.warehouse})"
        who = self.holder.describe() if self.holder else "a reader (a report, a check, a query)"
        if self.waited_s < REPORT_EVERY_S:
            return (
                f"waiting for the warehouse lock ({self.warehouse}): held by {who}; "
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


def _record_holder(fd: int) -> None:
    run_id, what = _holder_run.get()
    me = Holder(os.getpid(), socket.gethostname(), run_id, what, datetime.now(UTC))
    os.ftruncate(fd, 0)
    os.pwrite(fd, me.to_json(), 0)


def _acquire(fd: int, path: Path, mode: int, timeout_s: float) -> None:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    started = time.monotonic()
    reported_at = started
    _report(LockWait(path, _holder(fd), 0.0, timeout_s, acquired=False))
    while True:
        time.sleep(POLL_S)
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            now = time.monotonic()
            if now - started > timeout_s:
                holder = _holder(fd)
                by = f" by {holder.describe()}" if holder else ""
                raise WarehouseBusy(
                    f"the warehouse {path} stayed locked{by} for {timeout_s:g}s"
                ) from None
            if now - reported_at >= REPORT_EVERY_S:
                reported_at = now
                _report(LockWait(path, _holder(fd), now - started, timeout_s, acquired=False))
    _report(LockWait(path, None, time.monotonic() - started, timeout_s, acquired=True))


@contextmanager
def file_lock(path: Path, *, exclusive: bool, timeout_s: float) -> Iterator[None]:
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
