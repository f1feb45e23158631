"""Reading a backfill's ledger windows side by side: in threads, or each in a process of its own.

Windows are the natural unit to hand out: a window's pages are checked against each other (drift),
so it is read, restarted and staged as a whole, and windows do not depend on each other. Every
staged file lands in one transaction afterwards, exactly as if the windows had been read one
after another.

Threads first. Against the real API a window waits on round trips: page 1 (for the total) and the
probe past the end are one each that no concurrency inside the window hides. Windows read at once
in threads share the sync's client, so its key's limiter (pipelines/api/pacing.py) decides how
many requests are in flight across all of them, and a 429 pauses them all. The window holding the
range's last day (today, in a daily sync) is still read after the others, as it always was.

Processes when the CPU is the limit: decoding exact numbers, validating and fingerprinting is
interpreter work that threads cannot overlap. But a worker process has its own limiter, and two
limiters on one key each learn half the story of its rate limit (measured: a 20/s backfill at
80 ms took 1.26x its rate floor with a worker, 0.98x in one process). So a window goes to a worker
only when the CPU, not the network, is the limit, judged before any is handed out, from what the
key's limiter has seen (the probes of the windows' sizes included):

- the key is not rate-limited (no 429 in the last ten minutes): under a limit the rate sets the
  pace, and one limiter keeps to it best;
- the round trip is short: ``max_concurrency`` requests in flight over one round trip must bring
  more pages a second than one process parses (``PAGES_PER_PROCESS_S``). At 80 ms, 32 in flight
  bring 400 a second, below it, so a process more would add nothing but a second limiter; on a
  near server they bring thousands, and only more cores keep up.

Workers that do start begin at the sync's current level and share its pause (a Retry-After seen
by any process holds them all), so a limit met mid-backfill is not hammered by each in turn; each
worker's host bound is its share of ``CREDITLENS_HOST_CONCURRENCY``.

Workers import no Dagster and no DuckDB (only the client, polars and the validation rules), are
started by ``spawn`` (forking a process that runs polars' thread pool can deadlock), die with the
sync if it is killed (Linux: PR_SET_PDEATHSIG), and send page counts back for the progress bar.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import (
    FIRST_EXCEPTION,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pipelines.api.client import PlatformClient
from pipelines.api.ledger_reader import LedgerReader, PageRead, WindowDone, WindowRestart
from pipelines.api.options import ApiSettings
from pipelines.api.windows import Window
from pipelines.ledger.staging import LedgerStaging, StagedFile
from pipelines.runtime import failpoints

# A window shorter than this is read in the sync's own process without asking how big it is:
# a daily sync's few days never repay starting a worker (about a second of imports).
MIN_WORKER_DAYS = 28
# Windows read at once in the sync's process. Each hides its own serial round trips (page 1, the
# probe past the end) behind the others' pages and holds one staging batch in memory; four cover a
# daily sync's two windows and a multi-year backfill's 366-day ones.
WINDOW_THREADS = 4
# Ledger pages one process reads, validates and stages a second when the CPU is its limit: about
# 1.2-1.6 ms of CPU a page, measured over loopback on a 2-core machine.
PAGES_PER_PROCESS_S = 600


class PageSeen(Protocol):
    """What progress needs of a page: its window and how many entries it held."""

    @property
    def window(self) -> Window: ...

    @property
    def count(self) -> int: ...


@dataclass(frozen=True)
class PageCount:
    window: Window
    count: int


@dataclass(frozen=True)
class WindowJob:
    settings: ApiSettings
    window: Window
    account: str
    run_id: str
    fetched_at: datetime
    directory: Path


@dataclass
class StagedWindow:
    """A window read to the end and staged on disk, with what it took."""

    window: Window
    entry_files: list[StagedFile] = field(default_factory=list)
    quarantine_files: list[Path] = field(default_factory=list)
    fetched: int = 0
    staged: int = 0
    quarantined: int = 0
    pages: int = 0
    restarts: int = 0
    restart_reasons: list[str] = field(default_factory=list)
    requests: int = 0
    retries: int = 0
    throttled: int = 0


class _Stopped(Exception):
    """Another window of the sync failed: this one stops reading, the sync fails anyway."""


def stage_window(
    job: WindowJob,
    on_page: Callable[[PageRead], None] | None = None,
    client: PlatformClient | None = None,
    stop: threading.Event | None = None,
) -> StagedWindow:
    """Reads one window, restarting it on drift, and stages its entries; runs in any process.

    ``client``: the sync's own (its counters then include this window); a worker makes one.
    ``stop``: set when a window read beside this one failed.
    """
    if client is None:
        with PlatformClient(job.settings) as own:
            if _pause is not None:
                own.limiter.share_pause(_pause)
            return stage_window(job, on_page, own, stop)
    staging = LedgerStaging(
        job.directory, job.account, job.run_id, fetched_at=job.fetched_at, owner=False
    )
    reader = LedgerReader(client)
    for event in reader.read_window(job.window):
        if stop is not None and stop.is_set():
            raise _Stopped(f"window {job.window} stopped")
        if isinstance(event, PageRead):
            staging.add_page(event)
            if on_page:
                on_page(event)
        elif isinstance(event, WindowRestart):
            staging.restart_window()
        elif isinstance(event, WindowDone):
            staging.finish_window(event.window)
    return StagedWindow(
        window=job.window,
        entry_files=staging.entry_files,
        quarantine_files=staging.quarantine_files,
        fetched=staging.fetched,
        staged=staging.staged,
        quarantined=staging.quarantined,
        pages=reader.stats.pages,
        restarts=reader.stats.restarts,
        restart_reasons=reader.stats.restart_reasons,
        requests=reader.stats.requests,
        retries=reader.stats.retries,
        throttled=reader.stats.throttled,
    )


_progress: Any = None
_pause: Any = None  # the sync's shared pause end, in a worker


def _die_with(sync_pid: int, progress: Any, pause: Any = None) -> None:
    """Worker start-up: die with the sync, kill the sync at a failpoint, report pages, share the
    key's pause."""
    global _progress, _pause
    _progress, _pause = progress, pause
    failpoints.kill_with_sync(sync_pid)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            pass
        if os.getppid() != sync_pid:  # the sync died before the line above ran
            os.kill(os.getpid(), signal.SIGKILL)


def _stage_in_worker(job: WindowJob) -> StagedWindow:
    def report(page: PageRead) -> None:
        if _progress is not None:
            _progress.put((page.window, page.count))

    return stage_window(job, report)


def _drain(progress: Any, on_page: Callable[[PageSeen], None], stop: threading.Event) -> None:
    while True:
        try:
            item = progress.get(timeout=0.1)
        except queue.Empty:
            if stop.is_set():
                return
            continue
        on_page(PageCount(*item))


@contextmanager
def _main_not_rerun() -> Iterator[None]:
    """Spawned workers skip re-running the sync's main script.

    ``spawn`` re-runs the parent's ``__main__`` in each child, in case the work is a function
    defined there. The work here lives in this module, and the main script is the CLI (or
    Dagster, or pytest), whose imports, Dagster's among them, would cost each worker a second
    and 100 MB for nothing. Without ``__file__``, multiprocessing has no main script to re-run.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None or getattr(main, "__spec__", None) is not None:
        yield  # run with -m: spawn already skips a package's __main__ module
        return
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path


@contextmanager
def _workers(
    count: int, on_page: Callable[[PageSeen], None] | None, client: PlatformClient
) -> Iterator[Any]:
    context = multiprocessing.get_context("spawn")
    progress = context.Queue()
    pause = context.Value("d", client.limiter.paused_until())
    client.limiter.share_pause(pause)
    pool = ProcessPoolExecutor(
        max_workers=count,
        mp_context=context,
        initializer=_die_with,
        initargs=(os.getpid(), progress, pause),
    )
    stop = threading.Event()
    drain = threading.Thread(
        target=_drain, args=(progress, on_page or (lambda _: None), stop), daemon=True
    )
    drain.start()
    failed = False
    try:
        yield pool
    except BaseException:
        failed = True
        raise
    finally:
        if failed:  # nobody will land what the others stage: stop them now
            for process in list(getattr(pool, "_processes", {}).values()):
                process.kill()
        pool.shutdown(wait=True, cancel_futures=True)
        client.limiter.share_pause(None)
        stop.set()
        drain.join()
        progress.close()


def stage_windows(
    jobs: list[WindowJob],
    client: PlatformClient,
    *,
    processes: int,
    on_page: Callable[[PageSeen], None] | None = None,
) -> list[StagedWindow]:
    """Every window staged, in window order: long windows after the first go to workers when the
    CPU is the limit (module docstring), the rest are read in threads here."""
    remote: list[WindowJob] = []
    probes: dict[Window, int] = {}
    if processes > 1:
        reader = LedgerReader(client)
        for job in jobs[1:]:
            if (job.window.last - job.window.first).days + 1 < MIN_WORKER_DAYS:
                continue
            probes[job.window] = 1
            if reader.total(job.window) >= client.settings.worker_min_entries:
                remote.append(job)
        if not _cpu_bound(client):
            remote = []  # the network is the limit: one limiter keeps to it (module docstring)
    local = [j for j in jobs if j not in remote]  # the first window and the small ones
    if not remote:
        staged = _stage_here(local, client, on_page)
    else:
        workers = min(processes - 1, len(remote))
        with _workers(workers, on_page, client) as pool:
            settings = client.settings.model_copy(
                update={
                    "concurrency": client.concurrency_level,
                    "host_concurrency": max(1, client.settings.host_concurrency // processes),
                }
            )
            with _main_not_rerun():  # workers start here, on submit
                futures: dict[Window, Future[StagedWindow]] = {
                    job.window: pool.submit(_stage_in_worker, replace(job, settings=settings))
                    for job in remote
                }
            staged = _stage_here(local, client, on_page)
            for window, future in futures.items():
                staged[window] = future.result()
    for window, count in probes.items():
        staged[window].requests += count
    return [staged[job.window] for job in jobs]


def _cpu_bound(client: PlatformClient) -> bool:
    """Whether more processes would read faster (see the module docstring)."""
    limiter = client.limiter
    if limiter.rate_limited:
        return False
    round_trip = limiter.round_trip_s
    return round_trip is None or client.settings.max_concurrency > round_trip * PAGES_PER_PROCESS_S


def _stage_here(
    jobs: list[WindowJob], client: PlatformClient, on_page: Callable[[PageSeen], None] | None
) -> dict[Window, StagedWindow]:
    """Windows read at once in threads sharing ``client``, but the last one after all the others:
    it holds the range's last day, the one still being written, so whatever arrives while the
    others are read is in it, as when windows were read one after another. The first failure
    stops the others and is the one raised."""
    if not jobs:
        return {}
    *settled, last = jobs
    staged = _stage_together(settled, client, on_page)
    staged[last.window] = stage_window(last, on_page, client)
    return staged


def _stage_together(
    jobs: list[WindowJob], client: PlatformClient, on_page: Callable[[PageSeen], None] | None
) -> dict[Window, StagedWindow]:
    if len(jobs) <= 1:
        return {job.window: stage_window(job, on_page, client) for job in jobs}
    stop = threading.Event()
    with ThreadPoolExecutor(
        min(WINDOW_THREADS, len(jobs)), thread_name_prefix="ledger-window"
    ) as pool:
        futures = [pool.submit(stage_window, job, on_page, client, stop) for job in jobs]
        try:
            wait(futures, return_when=FIRST_EXCEPTION)
        finally:
            if not all(f.done() and f.exception() is None for f in futures):
                stop.set()
                for future in futures:
                    future.cancel()
        wait(futures)
    errors = [e for f in futures if not f.cancelled() and (e := f.exception()) is not None]
    if errors:
        raise next((e for e in errors if not isinstance(e, _Stopped)), errors[0])
    return {job.window: future.result() for job, future in zip(jobs, futures, strict=True)}
