"""Reading a backfill's ledger windows side by side, each in a process of its own.

Reading a window is mostly interpreter work: the HTTP exchange, decoding exact numbers,
validating and fingerprinting. Threads share one interpreter lock, so they cannot overlap that
work; processes can. A window is the natural unit to hand out: its pages are checked against each
other (drift), so it is read, restarted and staged as a whole, and windows do not depend on each
other. The sync reads the first window itself while the other long ones go to workers, and lands
every staged file in one transaction afterwards, exactly as if it had read them all itself.

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
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pipelines import failpoints
from pipelines.api.client import PlatformClient
from pipelines.api.ledger_reader import LedgerReader, PageRead, WindowDone, WindowRestart
from pipelines.api.settings import ApiSettings
from pipelines.api.windows import Window
from pipelines.ledger.staging import LedgerStaging, StagedFile

# A window shorter than this is read in the sync's own process without asking how big it is:
# a daily sync's few days never repay starting a worker (about a second of imports).
MIN_WORKER_DAYS = 28


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


def stage_window(
    job: WindowJob,
    on_page: Callable[[PageRead], None] | None = None,
    client: PlatformClient | None = None,
) -> StagedWindow:
    """Reads one window, restarting it on drift, and stages its entries; runs in any process.

    ``client``: the sync's own (its counters then include this window); a worker makes one.
    """
    if client is None:
        with PlatformClient(job.settings) as own:
            return stage_window(job, on_page, own)
    staging = LedgerStaging(
        job.directory, job.account, job.run_id, fetched_at=job.fetched_at, owner=False
    )
    requests, retries = client.requests_sent, client.retries
    reader = LedgerReader(client)
    for event in reader.read_window(job.window):
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
        requests=client.requests_sent - requests,
        retries=client.retries - retries,
    )


_progress: Any = None


def _die_with(sync_pid: int, progress: Any) -> None:
    """Worker start-up: die with the sync, kill the sync at a failpoint, report pages."""
    global _progress
    _progress = progress
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
def _workers(count: int, on_page: Callable[[PageSeen], None] | None) -> Iterator[Any]:
    context = multiprocessing.get_context("spawn")
    progress = context.Queue()
    pool = ProcessPoolExecutor(
        max_workers=count,
        mp_context=context,
        initializer=_die_with,
        initargs=(os.getpid(), progress),
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
    """Every window staged, in window order; long windows after the first go to workers."""
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
    local = [j for j in jobs if j not in remote]  # the first window and the small ones
    if not remote:
        staged = {job.window: stage_window(job, on_page, client) for job in local}
    else:
        with _workers(min(processes - 1, len(remote)), on_page) as pool:
            with _main_not_rerun():  # workers start here, on submit
                futures: dict[Window, Future[StagedWindow]] = {
                    job.window: pool.submit(_stage_in_worker, job) for job in remote
                }
            staged = {job.window: stage_window(job, on_page, client) for job in local}
            for window, future in futures.items():
                staged[window] = future.result()
    for window, count in probes.items():
        staged[window].requests += count
    return [staged[job.window] for job in jobs]
