"""Reading the ledger window by window, page by page, without trusting pagination blindly.

The API has no entry ids and no cursor: pages are offsets into a list that can move while we read
it (entries arriving, unstable order within ties). A window is accepted only when its pages agree
with each other: the same ``total`` on every page and on a probe past the end, every page as full
as ``total`` says, and, when rows repeat across a page boundary, a second read that sees the same
rows (two genuinely identical entries look exactly like a shifted page), and no page that repeats
another entry for entry (a server ignoring pageNumber serves page 1 for page 2: its entries would
land twice, as if identical, and the real page 2 never). Otherwise the window is read again, a
bounded number of times. Pages are yielded as they arrive, so memory stays bounded; a consumer
drops what it staged for a window when it sees ``WindowRestart``. A window, its retries and
re-reads included, must be read by its deadline (``CREDITLENS_WINDOW_DEADLINE_S``).

How many pages are in flight is not the reader's call: it keeps requests waiting for their turn
(a bounded look-ahead), and the key's limiter (pipelines/api/pacing.py) lets out as many as the
API takes. Several readers sharing a client (windows read at once) share that limiter.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from pipelines.api.client import PlatformClient
from pipelines.api.deadline import Deadline
from pipelines.api.environment import env_name
from pipelines.api.errors import DeadlineExceeded, LedgerDriftError
from pipelines.api.ledger_page import LedgerPage, parse_ledger_page
from pipelines.api.options import ApiSettings
from pipelines.api.windows import Window, split_windows

log = logging.getLogger(__name__)

TRANSACTIONS_PATH = "/Consumption/transactions"


@dataclass(frozen=True)
class PageRead:
    window: Window
    attempt: int
    page_number: int
    page: LedgerPage
    total: int

    @property
    def count(self) -> int:
        return self.page.count

    @property
    def entries(self) -> list[Any]:
        """The entries as parsed JSON; the pipeline itself reads ``page.columns()`` instead."""
        return self.page.data


@dataclass(frozen=True)
class WindowRestart:
    window: Window
    attempt: int
    reason: str


@dataclass(frozen=True)
class WindowDone:
    window: Window
    attempt: int
    pages: int
    entries: int


ReadEvent = PageRead | WindowRestart | WindowDone


@dataclass
class ReadStats:
    """What this reader did; ``requests``, ``retries`` and ``throttled`` are its own share of
    the client's counters (a ``Tally``), which other readers of the same client also move."""

    windows: int = 0
    pages: int = 0
    entries: int = 0
    restarts: int = 0
    restart_reasons: list[str] = field(default_factory=list)
    requests: int = 0
    retries: int = 0
    throttled: int = 0


class _Drift(Exception):
    pass


class LedgerReader:
    """Reads ``first..last`` as windows of at most ``max_window_days`` at ``page_size``."""

    def __init__(self, client: PlatformClient, *, drift_pause_s: float = 0.05) -> None:
        self.client = client
        self.settings = client.settings
        self.stats = ReadStats()
        self._drift_pause_s = drift_pause_s
        self._counting = threading.Lock()  # pages are fetched from several threads

    def windows(self, first: date, last: date) -> list[Window]:
        """Windows of at most ``max_window_days``; the range's last day is a window of its own.

        The last day is the one still being written (today, in a daily sync): new entries shift
        every page of the window that holds it. Alone, it is a page or two to re-read, while the
        settled days before it read clean once.
        """
        if last <= first:
            return split_windows(first, last, self.settings.max_window_days)
        settled = split_windows(first, last - timedelta(days=1), self.settings.max_window_days)
        return [*settled, Window(last, last)]

    def total(self, window: Window) -> int:
        """How many entries the window holds now, from its first page (one request)."""
        return self._fetch(window, 1).total

    def read(self, first: date, last: date) -> Iterator[ReadEvent]:
        for window in self.windows(first, last):
            yield from self.read_window(window)

    def read_window(self, window: Window) -> Iterator[ReadEvent]:
        attempts = self.settings.drift_retries + 1
        deadline = Deadline.after(
            self.settings.window_deadline_s,
            f"ledger window {window}",
            env_name(ApiSettings, "window_deadline_s"),
        )
        for attempt in range(1, attempts + 1):
            if deadline.left() <= 0:
                raise DeadlineExceeded(deadline.message(f"after {attempt - 1} reads"))
            try:
                pages, entries = yield from self._read_attempt(window, attempt, deadline)
            except _Drift as drift:
                reason = str(drift)
            else:
                self.stats.windows += 1
                self.stats.entries += entries
                yield WindowDone(window, attempt, pages, entries)
                return
            self.stats.restarts += 1
            self.stats.restart_reasons.append(f"{window}: {reason}")
            log.info("window %s attempt %d: %s", window, attempt, reason)
            yield WindowRestart(window, attempt, reason)
            time.sleep(self._drift_pause_s * attempt)
        raise LedgerDriftError(
            f"ledger window {window} kept changing while it was read ({attempts} reads): {reason}"
        )

    def _fetch(
        self, window: Window, page_number: int, deadline: Deadline | None = None
    ) -> LedgerPage:
        start, end = window.query(self.settings.range_format)
        params = {
            self.settings.range_start_param: start,
            self.settings.range_end_param: end,
            "pageNumber": page_number,
            "pageSize": self.settings.page_size,
        }
        where = f"ledger window {window} page {page_number}"
        page = self.client.get(
            TRANSACTIONS_PATH,
            params,
            lambda body: parse_ledger_page(body, where),
            deadline=deadline,
            tally=self.stats,
        )
        with self._counting:
            self.stats.pages += 1
        return page

    def _read_attempt(
        self, window: Window, attempt: int, deadline: Deadline
    ) -> Iterator[ReadEvent]:
        size = self.settings.page_size
        first = self._fetch(window, 1, deadline)
        total = first.total
        page_count = math.ceil(total / size)
        entries = 0
        previous: tuple[int, list[Any]] = (0, [])
        # Pairs of adjacent pages sharing a row: a shifted page, or genuinely identical entries.
        suspects: list[tuple[int, list[Any], list[Any]]] = []
        # Each page's identity, and the first page that had it: a digest each, not the entries.
        seen: dict[bytes, int] = {}

        def check(page: LedgerPage, number: int) -> None:
            nonlocal previous, entries
            if page.total != total:
                raise _Drift(f"total changed from {total} to {page.total} at page {number}")
            expected = max(0, min(size, total - (number - 1) * size))
            if page.count != expected:
                raise _Drift(f"page {number} has {page.count} entries, expected {expected}")
            if page.count:
                same = seen.setdefault(page.identity, number)
                if same != number:
                    raise _Drift(
                        f"page {number} repeats page {same} entry for entry: the server served "
                        "one page for another"
                    )
            keys = page.keys
            if not set(previous[1]).isdisjoint(keys):
                suspects.append((previous[0], previous[1], keys))
            previous = (number, keys)
            entries += len(keys)

        check(first, 1)
        yield PageRead(window, attempt, 1, first, total)
        if page_count > 1:
            for number, page in self._fetch_many(window, range(2, page_count + 1), deadline):
                check(page, number)
                yield PageRead(window, attempt, number, page, total)
        probe = self._fetch(window, page_count + 1, deadline)
        if probe.total != total or probe.count:
            raise _Drift(
                f"past the last page the ledger reports total {probe.total} "
                f"and {probe.count} more entries (expected {total} and none)"
            )
        for number, before, after in suspects:
            # Re-reading just the two pages tells the cases apart: identical entries come back
            # in the same places, a shift does not.
            again = [self._fetch(window, n, deadline) for n in (number, number + 1)]
            if any(p.total != total for p in again) or [p.keys for p in again] != [
                before,
                after,
            ]:
                raise _Drift(
                    f"rows repeated across pages {number} and {number + 1} and a re-read of "
                    "them differs: the pages shifted while they were read"
                )
        return page_count, entries

    def _fetch_many(
        self, window: Window, numbers: range, deadline: Deadline
    ) -> Iterator[tuple[int, LedgerPage]]:
        """Pages in order. Threads enough for the limiter's maximum; the requests waiting here are
        at most twice its current level (each done page waits for its turn to be yielded), so
        memory stays a few pages per request the API takes at once."""
        threads = self.settings.max_concurrency
        if threads <= 1:
            for number in numbers:
                yield number, self._fetch(window, number, deadline)
            return
        limiter = self.client.limiter
        pending: deque[tuple[int, Future[LedgerPage]]] = deque()
        todo = iter(numbers)
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ledger-page") as pool:
            try:
                while True:
                    ahead = min(2 * threads, max(2, 2 * limiter.level))
                    while len(pending) < ahead and (number := next(todo, None)) is not None:
                        pending.append((number, pool.submit(self._fetch, window, number, deadline)))
                    if not pending:
                        return
                    number, future = pending.popleft()
                    yield number, future.result()
            finally:
                for _, future in pending:
                    future.cancel()
