"""The network the simulator plays for a benchmark, and the companies behind it.

Latency and a per-key rate limit as the scenario's ``network:`` section; the companies' names;
and the requests each company needs at pageSize 100, counted as the raw floor counts them (page
1 of every window, then the pages its total implies): divided by the rate, the rate floor.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.peers.raw_floor import count_pages
from benchmarks.peers.simulated_company import COMPANY, SimulatedPlatform, simulated_platform
from simulator.network import NetworkSpec, parse_latency, parse_rate

LATENCY_MS = "80"
RATE_LIMIT = "20/s"
COUNT_THREADS = 16  # page 1 of every company's windows, counted side by side


def network_spec(latency: str, rate: str | None, burst: int | None) -> NetworkSpec:
    mean, jitter = parse_latency(latency)
    rate_per_s = parse_rate(rate) if rate else None
    return NetworkSpec(latency_ms=mean, jitter_ms=jitter, rate_limit_per_s=rate_per_s, burst=burst)


def rate_limited_spec(args: argparse.Namespace) -> tuple[NetworkSpec, float]:
    """The network of a benchmark measured against a rate floor, and its rate: it needs one."""
    spec = network_spec(args.latency_ms, args.rate_limit, args.burst)
    if spec.rate_limit_per_s is None:
        raise SystemExit(f"{args.benchmark} needs a rate limit (--rate-limit N/s)")
    return spec, spec.rate_limit_per_s


def section(spec: NetworkSpec) -> dict[str, Any]:
    """The scenario's ``network:`` section for ``spec``."""
    return spec.model_dump(exclude_defaults=True)


@contextmanager
def serving(
    args: argparse.Namespace,
    scratch: Path,
    names: Sequence[str],
    labels: Sequence[str],
    spec: NetworkSpec | None,
    *,
    days_before: int = 0,
    said: str = "",
) -> Iterator[SimulatedPlatform]:
    """The benchmark's simulator: every company ``--entries`` entries over ``--history-days`` up
    to ``--now`` (``days_before`` it), a key per label, behind ``spec`` (None: loopback)."""
    with simulated_platform(
        names,
        args.entries,
        args.now - timedelta(days=days_before),
        scratch / "simulator",
        labels=labels,
        network=section(spec) if spec else None,
        history_days=args.history_days,
    ) as platform:
        print(f"simulator ready in {platform.startup_s:.1f}s: {platform.network}{said}")
        yield platform


def company_names(count: int) -> list[str]:
    if count == 1:
        return [COMPANY]
    width = max(2, len(str(count)))
    return [f"company-{n:0{width}d}" for n in range(1, count + 1)]


def count_all(
    platform: SimulatedPlatform, windows: dict[str, list[str]], label: str = "floor"
) -> dict[str, tuple[int, int]]:
    """Per company: (entries, requests the floor needs) in its windows, page 1 of each only."""

    def one(company: str) -> tuple[int, int]:
        return count_pages(platform.base_url, platform.keys[company][label], windows[company])

    with ThreadPoolExecutor(min(COUNT_THREADS, len(windows))) as pool:
        return dict(zip(windows, pool.map(one, windows), strict=True))


def together(*jobs: Callable[[], Any]) -> list[Any]:
    """Runs the jobs (each waiting on a child process) at the same time; their results in order."""
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(job) for job in jobs]
        return [f.result() for f in futures]
