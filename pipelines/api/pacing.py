"""How many requests of one key are in flight, and how fast they start: the API's answers decide.

Against the real API a sync is bound by round trips and the key's rate limit (a token bucket:
a 429 with Retry-After in whole seconds, no RateLimit-* headers), not by CPU. A fixed number of
threads either leaves the allowed rate unused (too few for the round trip) or runs into the limit
over and over, each thread sleeping its own Retry-After and all of them stampeding back together.
So one limiter per key, shared by every request of that key in the process, decides instead:

- AIMD on the requests in flight, as TCP does on its window: start at ``CREDITLENS_CONCURRENCY``,
  grow by one per ``level`` successful answers (about one per round trip; four until the first
  cut, a mild slow start) while the level is all in use, up to ``CREDITLENS_MAX_CONCURRENCY``;
  halve on a 429, once per congestion epoch (the 429s of requests sent before the cut are the
  same congestion, not new); cut by a tenth when the smoothed round trip rises well above its
  recent minimum (requests queueing somewhere).
- One shared pause: a 429's Retry-After holds every request of the key, so the others neither
  earn a 429 of their own nor all come back in the same millisecond.
- Pacing: concurrency alone cannot go below one request per round trip, which on a near server is
  far above a key's rate. The bucket is empty at each 429, so the answers between two 429s over
  the time between them are what it refilled: the key's rate. From then on requests are spaced at
  that rate, which rises slowly while it binds: a raised limit is found, and the next 429 (its
  bucket drained by the excess) measures again. The waste is small by construction: a pause of
  Retry-After refills a bucket of one second's worth, and what is spent after it is the refill.
  Only a 429 with a Retry-After of a second or more measures: that is how a bucket answers, and
  a 429 saying "now" (Retry-After 0, or none) comes from something else (an injected fault, a
  proxy), so it only halves the level.

A process-wide bound per API host (``CREDITLENS_HOST_CONCURRENCY``) caps every key together.
Registries are keyed by a hash of base URL and key: the key's text is never held as a name.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any
from urllib.parse import urlsplit

from pipelines.api.retry import RETRY_AFTER_CAP_S

DECREASE = 0.5  # on a 429: the classic AIMD halving
QUEUE_DECREASE = 0.9  # on queueing: gentle, the server is slow, not refusing
# Queueing: the smoothed round trip above twice the recent minimum plus a few milliseconds (on
# loopback the minimum is a millisecond, and scheduling noise alone doubles it).
QUEUE_FACTOR = 2.0
QUEUE_SLACK_S = 0.005
# Until the first cut the level grows by 4 a round trip, not 1: from the default 4 to 32 in 7 round
# trips instead of 28 (at 80 ms, 0.6 s instead of 2.2 s of a backfill's start at a fraction of the
# speed), while a rate limit met on the way costs a few 429s more in its first burst, once.
START_GROWTH = 4.0
SMOOTHING = 0.2  # weight of a new round trip in the smoothed one
MIN_WINDOW_S = 10.0  # the minimum round trip is the least seen over the last 10-20 s
# A rate is measured over at least this long and this many answers, else the next 429 measures.
MEASURE_MIN_S = 0.5
MEASURE_MIN_ANSWERS = 4
PROBE_PER_S = 0.05  # while pacing binds, the rate rises by 5% of the measured one a second
RELEASE_FACTOR = 3.0  # pacing at 3x the measured rate with no 429: the limit is gone, stop pacing
IDLE_S = 2.0  # a key idle this long has a full bucket again: the next rate measure starts afresh
RECENT_S = 600.0  # a key refused within this long is still taken as rate-limited


class Outcome(Enum):
    OK = "ok"  # a 2xx: the round trip counts and the level may grow
    REFUSED = "refused"  # a 4xx but 429: an answer about the request, not about load
    THROTTLED = "throttled"  # a 429
    FAILED = "failed"  # a 5xx or no answer: the client's backoff handles it; the level stays
    UNSENT = "unsent"  # the turn was given back before sending (a deadline passed)


@dataclass(frozen=True, slots=True)
class Ticket:
    """One request's turn: its place in the order of sending (an answer to a request sent before
    the last cut cannot cut again), and whether the level or the pace held it back (growth is
    earned only by a limit that was binding)."""

    seq: int
    saturated: bool
    paced: bool


class AdaptiveLimiter:
    """The key's level (requests in flight), shared pause and pace; thread-safe, waiters FIFO."""

    def __init__(
        self,
        start: int,
        maximum: int,
        *,
        minimum: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.minimum = max(1, minimum)
        self.maximum = max(self.minimum, maximum)
        self._level = float(min(max(start, self.minimum), self.maximum))
        self._congested = False  # no cut yet: the level grows faster (see START_GROWTH)
        self.peak = int(self._level)
        self.throttled = 0
        self._throttled_at = -math.inf
        self._clock = clock
        self._lock = threading.Lock()
        self._waiters: deque[threading.Condition] = deque()
        self._in_flight = 0
        self._seq = 0
        self._epoch = 0  # tickets numbered up to this were sent before the last cut
        self._pause_until = 0.0
        self._shared: Any = None  # a process-shared cell holding a pause end (worker processes)
        self._smoothed: float | None = None
        self._mins = [math.inf, math.inf]
        self._mins_since = clock()
        self._answers = 0
        self._mark: tuple[float, int] | None = None  # a bucket-empty moment and answers then
        self._last_active = -math.inf
        self._rate: float | None = None  # requests a second, once a 429 measured one
        self._measured = 0.0
        self._next_send = -math.inf

    def __repr__(self) -> str:
        return f"AdaptiveLimiter(level={self.level}, peak={self.peak}, rate={self.rate})"

    @property
    def level(self) -> int:
        """Requests allowed in flight now."""
        return max(self.minimum, int(self._level))

    @property
    def rate(self) -> float | None:
        """The pace in requests a second, or None before any 429 measured the key's rate."""
        return self._rate

    @property
    def measured_rate(self) -> float | None:
        """The key's rate as the last two 429s measured it (the pace probes above it)."""
        return self._measured or None

    @property
    def rate_limited(self) -> bool:
        """Whether the key meets its rate limit: pacing it, or refused within ``RECENT_S``."""
        return self._rate is not None or self._clock() - self._throttled_at < RECENT_S

    @property
    def round_trip_s(self) -> float | None:
        """The least round trip of the last 10-20 s: the network's share of a request."""
        least = min(self._mins)
        return None if least == math.inf else least

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def set_maximum(self, maximum: int) -> None:
        with self._lock:
            self.maximum = max(self.minimum, maximum)
            self._set_level(self._level)

    def share_pause(self, cell: Any) -> None:
        """Also pause on (and publish to) ``cell.value``, a pause end other processes share."""
        self._shared = cell

    def pause_left(self) -> float:
        return max(0.0, self.paused_until() - self._clock())

    def paused_until(self) -> float:
        """When the key's pause ends (on the monotonic clock, which processes share)."""
        shared = self._shared
        return self._pause_until if shared is None else max(self._pause_until, shared.value)

    # -- taking and giving back a turn ----------------------------------------------------------

    def try_acquire(self) -> Ticket | None:
        """A turn now, or None: paused, every slot taken, not yet the pace's time, or queued."""
        with self._lock:
            return None if self._waiters else self._start(self._clock())

    def enter(self) -> Ticket:
        """A turn at once, whatever the level, pause or pace: for a caller that retries nothing
        (the key audit asks each endpoint once and reports what it got, a 429 included). Its
        answers still teach the limiter."""
        with self._lock:
            self._in_flight += 1
            self._seq += 1
            return Ticket(self._seq, saturated=False, paced=False)

    def acquire(self, until: float | None = None) -> Ticket | None:
        """A turn, first come first served; None once ``until`` (monotonic) passes first."""
        with self._lock:
            me: threading.Condition | None = None
            while True:
                now = self._clock()
                if (me is None and not self._waiters) or (
                    me is not None and self._waiters[0] is me
                ):
                    ticket = self._start(now)
                    if ticket is not None:
                        if me is not None:
                            self._waiters.popleft()
                            self._wake_head()
                        return ticket
                if me is None:
                    me = threading.Condition(self._lock)
                    self._waiters.append(me)
                wait = self._wait_s(now) if self._waiters[0] is me else None
                if until is not None:
                    if until <= now:
                        self._waiters.remove(me)
                        self._wake_head()
                        return None
                    wait = until - now if wait is None else min(wait, until - now)
                me.wait(wait)

    def release(
        self,
        ticket: Ticket,
        outcome: Outcome,
        latency_s: float = 0.0,
        retry_after: float | None = None,
    ) -> None:
        """The turn back, with what came of it; ``latency_s``: the round trip, send to body."""
        with self._lock:
            now = self._clock()
            self._in_flight -= 1
            self._last_active = now
            if outcome is Outcome.THROTTLED:
                self._throttled(ticket, now, retry_after)
            elif outcome is not Outcome.UNSENT:
                self._answers += 1
                if outcome is Outcome.OK:
                    self._succeeded(ticket, now, latency_s)
            self._wake_head()

    # -- the arithmetic, under the lock ---------------------------------------------------------

    def _start(self, now: float) -> Ticket | None:
        if now < self.paused_until() or self._in_flight >= self.level:
            return None
        paced = False
        if self._rate is not None:
            interval = 1.0 / self._rate
            if now < self._next_send:
                return None
            paced = self._next_send >= now - interval / 2  # sending as fast as the pace allows
            self._next_send = max(self._next_send, now) + interval
        if self._in_flight == 0 and now - self._last_active > IDLE_S:
            self._mark = (now, self._answers)
        self._in_flight += 1
        self._seq += 1
        return Ticket(self._seq, self._in_flight >= self.level, paced)

    def _wait_s(self, now: float) -> float | None:
        """How long the head of the queue waits for time (a pause, the pace); None: a slot."""
        if now < (paused := self.paused_until()):
            return paused - now
        if self._in_flight >= self.level:
            return None
        return max(0.0, self._next_send - now) if self._rate is not None else 0.0

    def _wake_head(self) -> None:
        if self._waiters:
            self._waiters[0].notify()

    def _set_level(self, value: float) -> None:
        self._level = min(float(self.maximum), max(float(self.minimum), value))
        self.peak = max(self.peak, self.level)

    def _cut(self, factor: float) -> None:
        """A decrease, and the start of an epoch: answers to requests sent before it cannot cut
        again (they were sent at the level just judged too high)."""
        self._set_level(self._level * factor)
        self._epoch = self._seq
        self._congested = True

    def _succeeded(self, ticket: Ticket, now: float, latency_s: float) -> None:
        if ticket.saturated:
            growth = 1.0 if self._congested else START_GROWTH
            self._set_level(self._level + growth / self._level)
        if ticket.paced and self._rate is not None:
            self._rate += PROBE_PER_S * self._measured / self._rate
            if self._rate > RELEASE_FACTOR * self._measured:
                self._rate = None
        if now - self._mins_since >= MIN_WINDOW_S:
            self._mins = [self._mins[1], math.inf]
            self._mins_since = now
        self._mins[1] = min(self._mins[1], latency_s)
        smoothed = self._smoothed
        smoothed = latency_s if smoothed is None else smoothed + SMOOTHING * (latency_s - smoothed)
        self._smoothed = smoothed
        floor = min(self._mins)
        if ticket.seq > self._epoch and smoothed > QUEUE_FACTOR * floor + QUEUE_SLACK_S:
            self._cut(QUEUE_DECREASE)

    def _throttled(self, ticket: Ticket, now: float, retry_after: float | None) -> None:
        self.throttled += 1
        self._throttled_at = now
        if retry_after:
            until = now + min(retry_after, RETRY_AFTER_CAP_S)
            self._pause_until = max(self._pause_until, until)
            if (shared := self._shared) is not None:
                with shared.get_lock():
                    shared.value = max(shared.value, until)
        if ticket.seq <= self._epoch:
            return
        self._cut(DECREASE)
        if retry_after is not None and retry_after >= 1:  # a bucket's answer, as gateways give it
            self._measure(now)

    def _measure(self, now: float) -> None:
        """The key's rate from the answers since the bucket was last empty (or full and idle)."""
        if self._mark is None:
            self._mark = (now, self._answers)
            return
        since, answers = self._mark
        elapsed, count = now - since, self._answers - answers
        if elapsed < MEASURE_MIN_S or count < MEASURE_MIN_ANSWERS:
            return  # too short to tell the bucket's burst from its rate: the next 429 will
        rate = count / elapsed
        if self._rate is not None:  # a 429 says the pace was too fast, and by less than half
            rate = min(self._rate, max(rate, self._rate * DECREASE))
        self._rate = self._measured = rate
        self._mark = (now, self._answers)


class HostGate:
    """At most ``limit`` requests in flight to one host, whatever key sends them."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._in_flight = 0
        self._ready = threading.Condition()

    def acquire(self, until: float | None = None) -> bool:
        with self._ready:
            while self._in_flight >= self.limit:
                left = None if until is None else until - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._ready.wait(left)
            self._in_flight += 1
            return True

    def release(self) -> None:
        with self._ready:
            self._in_flight -= 1
            self._ready.notify()


_registry_lock = threading.Lock()
_limiters: dict[str, AdaptiveLimiter] = {}
_hosts: dict[str, HostGate] = {}


def key_id(base_url: str, api_key: str) -> str:
    """The registry's name for a key at a base URL: a hash, so no table holds a key's text."""
    return hashlib.sha256(f"{base_url}\n{api_key}".encode()).hexdigest()


def limiter_for(base_url: str, api_key: str, start: int, maximum: int) -> AdaptiveLimiter:
    """The process's one limiter for this key; a later client's maximum applies from then on."""
    name = key_id(base_url, api_key)
    with _registry_lock:
        limiter = _limiters.get(name)
        if limiter is None:
            limiter = _limiters[name] = AdaptiveLimiter(start, maximum)
        else:
            limiter.set_maximum(maximum)
        return limiter


def host_gate_for(base_url: str, limit: int) -> HostGate:
    """The process's one gate for the host of ``base_url`` (scheme, host and port)."""
    parts = urlsplit(base_url)
    name = f"{parts.scheme}://{parts.hostname}:{parts.port}"
    with _registry_lock:
        gate = _hosts.get(name)
        if gate is None:
            gate = _hosts[name] = HostGate(limit)
        gate.limit = max(1, limit)
        return gate
