"""The physical floor: plain httpx fetching every ledger page as bytes, nothing else.

No JSON parsing, no validation, no storage: page 1 of each window is searched for ``"total":``
to know how many pages follow, and entries are counted by their ``"createdAt"`` keys so the
benchmark can check every contender saw the same ledger. Whatever a real pipeline does on top
costs time above this line.

A request that meets a transport error (a connection reset, a read cut short: at 64 connections
on a busy machine one in a million does) is tried again, a bounded number of times, and counted:
a benchmark must run to its end, and the retries are printed beside the floor's figure.

    BENCH_API_KEY=... python -m benchmarks.peers.raw_floor --base-url URL \
        --window 2024-07-01..2025-07-01 --mode threads --workers 4

Prints one JSON object: entries, pages, bytes, retries, seconds (first request to last byte).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import re
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import httpx

PATH = "/Consumption/transactions"
PAGE_SIZE = 100
MAX_PAGES = 200_000  # bound on the request loop: 20 million entries
TOTAL = re.compile(rb'"total"\s*:\s*(\d+)')
RETRIES = 5  # further attempts per request after a transport error
RETRY_PAUSE_S = 0.2  # doubled after each attempt
# Page threads count their retries side by side; a tally itself crosses process boundaries
# (pickled back from a worker process), so the lock cannot live in it.
_RETRY_LOCK = threading.Lock()


def _params(window: str, page: int) -> dict[str, str | int]:
    start, end = window.split("..")
    return {"startDate": start, "endDate": end, "pageNumber": page, "pageSize": PAGE_SIZE}


def _pages_after_first(first_page: bytes) -> int:
    match = TOTAL.search(first_page)
    if match is None:
        raise RuntimeError("page 1 carries no total")
    return max(0, math.ceil(int(match.group(1)) / PAGE_SIZE) - 1)


class _Tally:
    def __init__(self) -> None:
        self.pages = 0
        self.bytes = 0
        self.entries = 0
        self.retries = 0

    def add(self, body: bytes) -> None:
        self.pages += 1
        self.bytes += len(body)
        self.entries += body.count(b'"createdAt"')

    def merge(self, part: _Tally) -> None:
        self.pages += part.pages
        self.bytes += part.bytes
        self.entries += part.entries
        self.retries += part.retries

    def retry_pause(self, attempt: int, error: httpx.TransportError) -> float:
        """Seconds to wait before attempt ``attempt + 1``; ``error`` again once they are spent."""
        if attempt >= RETRIES:
            raise error
        with _RETRY_LOCK:
            self.retries += 1
        return RETRY_PAUSE_S * 2**attempt


def _check_deadline(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise TimeoutError("raw floor ran past its time bound")


def _get(client: httpx.Client, window: str, page: int, tally: _Tally, deadline: float) -> bytes:
    """One page's bytes, tried again after a transport error (bounded, counted in ``tally``)."""
    attempt = 0
    while True:
        _check_deadline(deadline)
        try:
            response = client.get(PATH, params=_params(window, page))
        except httpx.TransportError as error:
            time.sleep(tally.retry_pause(attempt, error))
            attempt += 1
            continue
        response.raise_for_status()
        return response.content


async def _get_async(
    client: httpx.AsyncClient, window: str, page: int, tally: _Tally, deadline: float
) -> bytes:
    """``_get`` on the async client."""
    attempt = 0
    while True:
        _check_deadline(deadline)
        try:
            response = await client.get(PATH, params=_params(window, page))
        except httpx.TransportError as error:
            await asyncio.sleep(tally.retry_pause(attempt, error))
            attempt += 1
            continue
        response.raise_for_status()
        return response.content


def _plan(first_pages: dict[str, bytes]) -> list[tuple[str, int]]:
    todo = [
        (window, page)
        for window, body in first_pages.items()
        for page in range(2, 2 + _pages_after_first(body))
    ]
    if len(todo) > MAX_PAGES:
        raise RuntimeError(f"{len(todo)} pages is past the bound of {MAX_PAGES}")
    return todo


def count_pages(
    base_url: str, key: str, windows: list[str], timeout_s: float = 60
) -> tuple[int, int]:
    """Entries and requests the floor needs for ``windows``, from page 1 of each alone.

    On a rate-limited network the floor is not fetched but computed, requests needed / rate, and
    this is how many requests it counts: every window's page 1 and the pages its total implies,
    as ``_plan`` hands them out. A 429 is waited out (Retry-After), so a small bucket still counts.
    """
    entries = 0
    first_pages: dict[str, bytes] = {}
    deadline = time.monotonic() + timeout_s
    with httpx.Client(base_url=base_url, headers={"X-Api-Key": key}, timeout=30) as client:
        for window in windows:
            while True:
                response = client.get(PATH, params=_params(window, 1))
                if response.status_code != 429 or time.monotonic() > deadline:
                    break
                time.sleep(float(response.headers.get("Retry-After", "1")))
            response.raise_for_status()
            first_pages[window] = response.content
            match = TOTAL.search(response.content)
            entries += int(match.group(1)) if match else 0
    return entries, len(windows) + len(_plan(first_pages))


def fetch_threads(
    base_url: str, key: str, windows: list[str], workers: int, deadline: float
) -> _Tally:
    tally = _Tally()
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
    with httpx.Client(
        base_url=base_url, headers={"X-Api-Key": key}, timeout=30, limits=limits
    ) as client:

        def get(window: str, page: int) -> bytes:
            return _get(client, window, page, tally, deadline)

        first_pages = {window: get(window, 1) for window in windows}
        for body in first_pages.values():
            tally.add(body)
        todo = _plan(first_pages)
        if workers <= 1:
            for window, page in todo:
                tally.add(get(window, page))
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for body in pool.map(lambda item: get(*item), todo):
                    tally.add(body)
    return tally


def _fetch_share(base_url: str, key: str, todo: list[tuple[str, int]], deadline: float) -> _Tally:
    """One process's share of the pages, fetched sequentially on its own connection."""
    tally = _Tally()
    with httpx.Client(base_url=base_url, headers={"X-Api-Key": key}, timeout=30) as client:
        for window, page in todo:
            tally.add(_get(client, window, page, tally, deadline))
    return tally


def _ready() -> bool:
    return True


def fetch_processes(
    base_url: str, key: str, windows: list[str], workers: int, deadline: float
) -> tuple[_Tally, float]:
    """Pages shared out over ``workers`` processes: no interpreter lock between the requests.

    The clock starts once every process is up (as it excludes this interpreter's start-up).
    """
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for future in [pool.submit(_ready) for _ in range(workers * 2)]:
            future.result()
        started = time.perf_counter()
        total = _Tally()
        first_pages: dict[str, bytes] = {}
        with httpx.Client(base_url=base_url, headers={"X-Api-Key": key}, timeout=30) as client:
            for window in windows:
                first_pages[window] = _get(client, window, 1, total, deadline)
                total.add(first_pages[window])
        todo = _plan(first_pages)
        shares = [todo[i::workers] for i in range(workers)]
        futures = [pool.submit(_fetch_share, base_url, key, part, deadline) for part in shares]
        for future in futures:
            total.merge(future.result())
        return total, time.perf_counter() - started


async def _fetch_async(
    base_url: str, key: str, windows: list[str], concurrency: int, deadline: float
) -> _Tally:
    tally = _Tally()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=base_url, headers={"X-Api-Key": key}, timeout=30, limits=limits
    ) as client:

        async def get(window: str, page: int) -> bytes:
            return await _get_async(client, window, page, tally, deadline)

        first_pages = {window: await get(window, 1) for window in windows}
        for body in first_pages.values():
            tally.add(body)
        todo = iter(_plan(first_pages))

        async def worker() -> None:
            for window, page in todo:  # one shared iterator: each page is taken once
                tally.add(await get(window, page))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--window", action="append", required=True, help="FIRST..LAST, inclusive")
    parser.add_argument("--mode", choices=["threads", "async", "procs"], default="threads")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=1800)
    args = parser.parse_args(argv)
    key = os.environ.get("BENCH_API_KEY")
    if not key:
        print("BENCH_API_KEY is not set", file=sys.stderr)
        return 2
    deadline = time.monotonic() + args.time_limit
    started = time.perf_counter()
    if args.mode == "procs":
        tally, seconds = fetch_processes(args.base_url, key, args.window, args.workers, deadline)
    else:
        if args.mode == "async":
            tally = asyncio.run(
                _fetch_async(args.base_url, key, args.window, args.workers, deadline)
            )
        else:
            tally = fetch_threads(args.base_url, key, args.window, args.workers, deadline)
        seconds = time.perf_counter() - started
    result = {
        "entries": tally.entries,
        "pages": tally.pages,
        "bytes": tally.bytes,
        "retries": tally.retries,
        "seconds": seconds,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
