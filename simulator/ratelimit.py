"""Per-key token buckets: the platform's rate limit as a client meets it.

A bucket holds at most `burst` tokens and refills at `rate` tokens a second; a request takes one
token or, when none is left, is refused with the whole seconds until one will be there. Refused
requests take nothing, so a client that honours Retry-After is never punished for asking.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# A client pacing exactly at the rate must not be refused because of float rounding in the refill.
_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class Admission:
    """The limiter's answer for one request.

    `retry_after_s`: whole seconds until a token is available (>= 1) when refused, else 0.
    `remaining`: whole tokens left after this request. `reset_s`: whole seconds until the bucket
    is full again (what draft RateLimit-Reset means for a token bucket).
    """

    allowed: bool
    retry_after_s: int
    limit: int
    remaining: int
    reset_s: int

    def header_pairs(self) -> list[tuple[bytes, bytes]]:
        """RateLimit-Limit/-Remaining/-Reset (draft-ietf-httpapi-ratelimit-headers) as raw ASGI
        headers: they go onto pre-serialized responses without building a Response."""
        return [
            (b"ratelimit-limit", str(self.limit).encode()),
            (b"ratelimit-remaining", str(self.remaining).encode()),
            (b"ratelimit-reset", str(self.reset_s).encode()),
        ]


class _Bucket:
    __slots__ = ("stamp", "tokens")

    def __init__(self, tokens: float, stamp: float) -> None:
        self.tokens = tokens
        self.stamp = stamp


class RateLimiter:
    """Token buckets keyed by the API key's text, created full on a key's first request.

    Thread-safe: one lock around refill-and-take, so concurrent requests (the event loop, or
    several servers of one Simulator) never both take the last token. The clock is injectable
    so the arithmetic is testable without sleeping.
    """

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not rate > 0 or not math.isfinite(rate):
            raise ValueError("rate must be a positive number of requests per second")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.rate = float(rate)
        self.burst = int(burst)
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, _Bucket] = {}  # keyed by secret: never printed

    def __repr__(self) -> str:
        return f"RateLimiter(rate={self.rate:g}/s, burst={self.burst}, keys={len(self._buckets)})"

    def admit(self, key: str) -> Admission:
        """Takes a token from `key`'s bucket if there is one; a refusal takes nothing."""
        with self._lock:
            now = self._clock()
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            elif now > bucket.stamp:
                bucket.tokens = min(
                    float(self.burst), bucket.tokens + (now - bucket.stamp) * self.rate
                )
                bucket.stamp = now
            allowed = bucket.tokens >= 1 - _EPSILON
            if allowed:
                bucket.tokens = max(0.0, bucket.tokens - 1)
                retry_after = 0
            else:
                retry_after = max(1, math.ceil((1 - bucket.tokens) / self.rate - _EPSILON))
            tokens = bucket.tokens
        return Admission(
            allowed=allowed,
            retry_after_s=retry_after,
            limit=self.burst,
            remaining=int(tokens + _EPSILON),
            reset_s=max(0, math.ceil((self.burst - tokens) / self.rate - _EPSILON)),
        )
