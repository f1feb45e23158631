"""Counters of what the simulator answered, per key: what a benchmark reports next to its timings.

A benchmark against a rate-limited simulator must show both that its client ended with zero
failed requests and how many 429s it had to retry through to get there; the server's count is
the honest one (a client may retry inside its transport where the benchmark cannot see).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from simulator.keys import ApiKey

# The status recorded for a request answered by a TCP reset (the "reset" fault): no response.
NO_RESPONSE = 0


@dataclass
class TrafficCount:
    """`requests` answered (any status); `rate_limited`: 429s from the rate limiter only (a
    scripted "429" fault shows in `statuses[429]`, not here); `statuses`: status -> count, with
    0 for a connection reset."""

    requests: int = 0
    rate_limited: int = 0
    statuses: dict[int, int] = field(default_factory=dict)

    def add(self, status: int, rate_limited: bool) -> None:
        self.requests += 1
        if rate_limited:
            self.rate_limited += 1
        self.statuses[status] = self.statuses.get(status, 0) + 1

    def copy(self) -> TrafficCount:
        return TrafficCount(self.requests, self.rate_limited, dict(self.statuses))


class Traffic:
    """`sim.traffic`: totals and per-key counts of every request an endpoint answered.

    Written by the server's event loop, read by a test or benchmark thread: every access holds
    one lock and reads return copies. Keys are `ApiKey`s (whose repr shows only a fingerprint);
    requests without a known key count under `unauthenticated`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = TrafficCount()
        self._unauthenticated = TrafficCount()
        self._by_key: dict[ApiKey, TrafficCount] = {}

    def record(self, key: ApiKey | None, status: int, rate_limited: bool = False) -> None:
        with self._lock:
            self._total.add(status, rate_limited)
            if key is None:
                self._unauthenticated.add(status, rate_limited)
                return
            count = self._by_key.get(key)
            if count is None:
                count = self._by_key[key] = TrafficCount()
            count.add(status, rate_limited)

    @property
    def requests(self) -> int:
        with self._lock:
            return self._total.requests

    @property
    def rate_limited(self) -> int:
        with self._lock:
            return self._total.rate_limited

    def total(self) -> TrafficCount:
        with self._lock:
            return self._total.copy()

    @property
    def unauthenticated(self) -> TrafficCount:
        with self._lock:
            return self._unauthenticated.copy()

    def per_key(self) -> dict[ApiKey, TrafficCount]:
        with self._lock:
            return {key: count.copy() for key, count in self._by_key.items()}

    def for_key(self, key: ApiKey | str) -> TrafficCount:
        """The counts of one key, given as an `ApiKey` or as its text; zeros if never seen."""
        with self._lock:
            for known, count in self._by_key.items():
                if known == key or known.secret == key:
                    return count.copy()
        return TrafficCount()

    def reset(self) -> None:
        """Zeroes every count, e.g. between a benchmark's warm-up and its measured run."""
        with self._lock:
            self._total = TrafficCount()
            self._unauthenticated = TrafficCount()
            self._by_key.clear()

    def __repr__(self) -> str:
        total = self.total()
        return (
            f"Traffic(requests={total.requests}, rate_limited={total.rate_limited}, "
            f"statuses={dict(sorted(total.statuses.items()))})"
        )
