"""Network conditions: round-trip latency with jitter, and a per-key token-bucket rate limit.

On loopback the simulator answers in microseconds with no limit, so a sync looks bound by CPU;
against the real API it is bound by round trips and per-key rate limits. `NetworkSpec` says which
(a scenario's `network:` section, `Simulator(network=...)`, `serve(network=...)`, or the CLI's
`--latency-ms/--rate-limit/--burst`); `Network` is what the app asks on every request.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simulator.ratelimit import Admission, RateLimiter


class NetworkSpec(BaseModel):
    """How far away the platform is, and how much a key may ask of it.

    latency_ms: mean round trip added to every request; jitter_ms: each request's latency is
    drawn uniformly from [latency - jitter, latency + jitter], clipped at 0 (a jitter above the
    latency raises the mean). rate_limit_per_s: per-key token bucket refill, None = no limit;
    burst: the bucket's size, default the rate rounded up (at least 1), one second's worth, as
    API gateways configure it. rate_limit_headers: also send RateLimit-Limit/-Remaining/-Reset
    (off by default: the spec shows no rate-limit headers, so a client must not need them).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    latency_ms: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    jitter_ms: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    rate_limit_per_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    burst: int | None = Field(default=None, ge=1)
    rate_limit_headers: bool = False

    @model_validator(mode="after")
    def _burst_needs_rate(self) -> Self:
        if self.burst is not None and self.rate_limit_per_s is None:
            raise ValueError("burst needs rate_limit_per_s")
        return self

    @property
    def effective_burst(self) -> int | None:
        if self.rate_limit_per_s is None:
            return None
        return self.burst if self.burst is not None else max(1, math.ceil(self.rate_limit_per_s))

    def describe(self) -> str:
        """One line for the CLI's banner."""
        if self.latency_ms or self.jitter_ms:
            latency = f"latency {self.latency_ms:g} ms"
            if self.jitter_ms:
                latency += f" +/- {self.jitter_ms:g} ms"
        else:
            latency = "no added latency"
        if self.rate_limit_per_s is None:
            limit = "no rate limit"
        else:
            limit = f"rate limit {self.rate_limit_per_s:g}/s per key, burst {self.effective_burst}"
        return f"{latency}, {limit}"


def parse_latency(text: str) -> tuple[float, float]:
    """ "80" -> (80, 0); "80,20" -> (80, 20): mean and jitter in milliseconds."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) > 2 or not all(parts):
        raise ValueError(f"expected MEAN or MEAN,JITTER in milliseconds (80 or 80,20): {text!r}")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"{part!r} is not a number of milliseconds") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"milliseconds must be finite and >= 0, not {part!r}")
        values.append(value)
    return values[0], values[1] if len(values) == 2 else 0.0


def parse_rate(text: str) -> float | None:
    """ "20/s" or "20" -> 20.0 requests a second per key; "off" -> None (no limit)."""
    raw = text.strip().lower()
    if raw in ("off", "none"):
        return None
    number = raw.removesuffix("/s").strip()
    try:
        rate = float(number)
    except ValueError:
        raise ValueError(
            f"expected N/s (requests a second per key, e.g. 20/s or 0.5/s) or off, not {text!r}"
        ) from None
    if not math.isfinite(rate) or rate <= 0:
        raise ValueError(f"the rate must be a positive number of requests a second, not {text!r}")
    return rate


class Network:
    """`sim.network`: the live conditions, reconfigurable on a running server like the faults.

    Latency draws come from an RNG seeded by the simulator's seed, so a sequential client sees
    the same latencies run after run (concurrent clients draw in arrival order). `configure`
    restarts both the draws and every bucket.
    """

    def __init__(
        self, spec: NetworkSpec, seed: int = 0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._seed = seed
        self._clock = clock
        self._lock = threading.Lock()
        self.configure(spec)

    def configure(self, spec: NetworkSpec) -> None:
        limiter = None
        if spec.rate_limit_per_s is not None:
            burst = spec.effective_burst
            assert burst is not None
            limiter = RateLimiter(spec.rate_limit_per_s, burst, self._clock)
        with self._lock:
            self.spec = spec
            self.seeded_rng = random.Random(f"{self._seed}/network-latency")
            self.limiter = limiter
            # Read without the lock on every request: False keeps the loopback path sleep-free.
            self.has_latency = spec.latency_ms + spec.jitter_ms > 0
            self.rate_limit_headers = spec.rate_limit_headers

    def latency_s(self) -> float:
        """One request's round trip, in seconds."""
        if not self.has_latency:
            return 0.0
        with self._lock:
            mean, jitter = self.spec.latency_ms, self.spec.jitter_ms
            drawn = mean + jitter * (2 * self.seeded_rng.random() - 1) if jitter else mean
        return max(0.0, drawn) / 1000

    def admit(self, key: str) -> Admission | None:
        """The limiter's decision for a request with this (authenticated) key; None: no limit."""
        limiter = self.limiter
        return None if limiter is None else limiter.admit(key)

    def __repr__(self) -> str:
        return f"Network({self.spec.describe()})"
