"""The key's limiter: its arithmetic on an injected clock, then the client through it against the
real simulator's latency and per-key token bucket (429 + Retry-After, no RateLimit-* headers)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pipelines.api import pacing
from pipelines.api.errors import RateLimited, Unauthorized
from pipelines.api.ledger_reader import LedgerReader
from pipelines.api.pacing import AdaptiveLimiter, HostGate, Outcome, Ticket, key_id, limiter_for
from pipelines.ledger import window_workers
from pipelines.ledger.staging import LedgerStaging
from pipelines.ledger.window_workers import WindowJob, stage_windows
from simulator import Fault, NetworkSpec, Scenario
from tests.client.test_client import as_truth, read_all, truth_rows
from tests.conftest import Simulated

Start = Callable[..., Simulated]
RTT = 0.08


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Cell:
    """A pause end shared by processes, as multiprocessing.Value holds it."""

    def __init__(self) -> None:
        self.value = 0.0
        self._lock = threading.Lock()

    def get_lock(self) -> threading.Lock:
        return self._lock


def fill(limiter: AdaptiveLimiter) -> list[Ticket]:
    tickets = []
    while (ticket := limiter.try_acquire()) is not None:
        tickets.append(ticket)
    return tickets


def steady(limiter: AdaptiveLimiter, clock: Clock, answers: int, latency: float = RTT) -> None:
    """Every slot kept busy, as threads waiting for their turn keep it: each answer frees a slot
    that the next request takes at once."""
    in_flight = fill(limiter)
    for _ in range(answers):
        clock.advance(latency / max(1, len(in_flight)))
        limiter.release(in_flight.pop(0), Outcome.OK, latency)
        in_flight += fill(limiter)
    for ticket in in_flight:
        limiter.release(ticket, Outcome.OK, latency)


# -- the arithmetic ----------------------------------------------------------------------------


def test_the_level_grows_by_one_per_level_answers_while_it_is_all_in_use() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(4, 32, clock=clock)
    assert limiter.level == 4 and len(fill(limiter)) == 4 and limiter.try_acquire() is None
    limiter = AdaptiveLimiter(4, 32, clock=clock)
    steady(limiter, clock, 4 + 8)  # before any cut, four a round trip: 4 answers, then 8
    assert 10 <= limiter.level <= 12
    refused = limiter.try_acquire()
    assert refused is not None
    limiter.release(refused, Outcome.THROTTLED, RTT)  # a first cut: from now on, one a round trip
    level = limiter.level
    steady(limiter, clock, level + (level + 1) + (level + 2))
    assert level + 2 <= limiter.level <= level + 3
    steady(limiter, clock, 2000)
    assert limiter.level == limiter.peak == 32  # and never past the maximum


def test_a_level_not_in_use_does_not_grow() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(4, 32, clock=clock)
    for _ in range(200):  # one request at a time: the level is not what holds the reader back
        ticket = limiter.try_acquire()
        assert ticket is not None and not ticket.saturated
        clock.advance(RTT)
        limiter.release(ticket, Outcome.OK, RTT)
    assert limiter.level == 4


def test_a_burst_of_429s_halves_once_and_pauses_every_request_of_the_key() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(16, 32, clock=clock)
    burst = fill(limiter)
    for ticket in burst:  # one congestion: every request already in flight is refused
        limiter.release(ticket, Outcome.THROTTLED, RTT, retry_after=2.0)
    assert limiter.level == 8 and limiter.throttled == 16
    assert limiter.pause_left() == pytest.approx(2.0) and limiter.try_acquire() is None
    clock.advance(2.0)
    again = limiter.try_acquire()
    assert again is not None  # sent after the cut: its 429 is news, and cuts again
    limiter.release(again, Outcome.THROTTLED, RTT, retry_after=1.0)
    assert limiter.level == 4
    clock.advance(1.0)
    for _ in range(10):
        for ticket in fill(limiter):
            limiter.release(ticket, Outcome.THROTTLED, RTT, retry_after=1.0)
        clock.advance(1.0)
    assert limiter.level == 1  # never below one request in flight


def test_a_caller_that_retries_nothing_is_never_held_and_still_teaches() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(1, 32, clock=clock)
    held = limiter.try_acquire()
    assert held is not None and limiter.try_acquire() is None
    limiter.release(held, Outcome.THROTTLED, RTT, retry_after=5.0)
    asked = limiter.enter()  # the key is paused, yet an audit's one question goes out
    limiter.release(asked, Outcome.THROTTLED, RTT, retry_after=5.0)
    assert limiter.throttled == 2 and limiter.pause_left() == pytest.approx(5.0)


def test_neither_a_4xx_nor_a_5xx_moves_the_level() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(4, 32, clock=clock)
    for outcome in (Outcome.REFUSED, Outcome.FAILED, Outcome.UNSENT):
        for ticket in fill(limiter):
            limiter.release(ticket, outcome, RTT)
    assert limiter.level == 4 and limiter.throttled == 0 and limiter.pause_left() == 0


def test_a_429_without_a_retry_after_halves_but_neither_pauses_nor_paces() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(8, 32, clock=clock)
    for _ in range(3):
        clock.advance(1.0)
        for ticket in fill(limiter):
            clock.advance(0.01)
            limiter.release(ticket, Outcome.THROTTLED, RTT, retry_after=None)
    assert limiter.level == 1 and limiter.pause_left() == 0 and limiter.rate is None
    assert limiter.rate_limited  # for a while: no worker process splits the key's limiter
    clock.advance(pacing.RECENT_S)
    assert not limiter.rate_limited


def test_queueing_cuts_gently_once_a_round_trip() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(20, 32, clock=clock)
    for _ in range(3):
        for ticket in fill(limiter):  # a batch, not saturated but for the last: level 20 stays
            limiter.release(ticket, Outcome.OK, RTT)
    level = limiter.level
    slow = fill(limiter)
    for ticket in slow:  # round trips five times the minimum: requests queue somewhere
        limiter.release(ticket, Outcome.OK, 5 * RTT)
    assert limiter.level == int(level * pacing.QUEUE_DECREASE)  # once for the whole batch
    for ticket in fill(limiter):
        limiter.release(ticket, Outcome.OK, 5 * RTT)
    assert limiter.level == int(int(level * pacing.QUEUE_DECREASE) * pacing.QUEUE_DECREASE)


def bucket_server(
    limiter: AdaptiveLimiter, clock: Clock, seconds: float, rate: float, rtt: float
) -> tuple[int, int]:
    """The simulator's token bucket (burst: one second's worth), requests answered a round trip
    after they are sent, the limiter asked every millisecond; answers and 429s."""
    burst = math.ceil(rate)
    tokens, stamp, end = float(burst), clock(), clock() + seconds
    flying: list[tuple[float, Ticket, bool, float]] = []
    answered = refused = 0
    while clock() < end:
        now = clock()
        for done in [f for f in flying if f[0] <= now]:
            flying.remove(done)
            _, ticket, ok, retry_after = done
            outcome = Outcome.OK if ok else Outcome.THROTTLED
            limiter.release(ticket, outcome, rtt, None if ok else retry_after)
        while (ticket := limiter.try_acquire()) is not None:
            tokens, stamp = min(burst, tokens + (now - stamp) * rate), now
            ok = tokens >= 1
            tokens -= 1 if ok else 0
            flying.append((now + rtt, ticket, ok, max(1, math.ceil((1 - tokens) / rate))))
            answered, refused = answered + ok, refused + (not ok)
        clock.advance(0.001)
    return answered, refused


@pytest.mark.parametrize(("rate", "rtt"), [(20, RTT), (25, 0.005), (100, RTT)])
def test_a_token_bucket_is_used_at_its_rate_with_few_429s(rate: float, rtt: float) -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(4, 32, clock=clock)
    seconds = 60
    answered, refused = bucket_server(limiter, clock, seconds, rate, rtt)
    best = math.ceil(rate) + rate * seconds  # the full bucket, then its refill
    assert answered >= best / 1.05, (answered, best)
    assert refused <= 0.03 * (answered + refused), refused
    assert limiter.measured_rate == pytest.approx(rate, rel=0.1)
    print(f"bucket {rate}/s, rtt {rtt}s: {answered}/{best:.0f} answers, {refused} 429s")


def test_requests_are_spaced_at_the_pace_which_rises_while_it_binds() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(4, 32, clock=clock)
    first = limiter.try_acquire()
    assert first is not None
    limiter.release(first, Outcome.OK, 0.01)
    for _ in range(19):
        clock.advance(0.05)
        ticket = limiter.try_acquire()
        assert ticket is not None
        limiter.release(ticket, Outcome.OK, 0.01)
    clock.advance(0.05)
    refused = limiter.try_acquire()
    assert refused is not None
    limiter.release(refused, Outcome.THROTTLED, 0.01, retry_after=1.0)
    assert limiter.rate == pytest.approx(20.0, rel=0.01)
    clock.advance(1.0)
    sent = 0
    for _ in range(5000):  # one simulated second, a millisecond at a time
        ticket = limiter.try_acquire()
        if ticket is not None:
            sent += 1
            limiter.release(ticket, Outcome.OK, 0.01)
        clock.advance(0.0002)
    assert 19 <= sent <= 22  # 20 a second, a little more as the pace probes upwards
    assert 20.0 < limiter.rate < 20.0 * (1 + 2 * pacing.PROBE_PER_S)


def test_a_pause_is_shared_with_the_other_processes_of_the_sync() -> None:
    clock = Clock()
    here, worker, cell = (
        AdaptiveLimiter(4, 32, clock=clock),
        AdaptiveLimiter(4, 32, clock=clock),
        Cell(),
    )
    here.share_pause(cell)
    worker.share_pause(cell)
    ticket = here.try_acquire()
    assert ticket is not None
    here.release(ticket, Outcome.THROTTLED, RTT, retry_after=3.0)
    assert worker.try_acquire() is None and worker.pause_left() == pytest.approx(3.0)
    clock.advance(3.0)
    assert worker.try_acquire() is not None


def test_waiters_take_their_turns_in_order_and_give_up_at_their_deadline() -> None:
    limiter = AdaptiveLimiter(1, 1)
    held = limiter.acquire()
    assert held is not None
    order: list[int] = []

    def wait_turn(n: int) -> None:
        ticket = limiter.acquire(time.monotonic() + 10)
        assert ticket is not None
        order.append(n)
        limiter.release(ticket, Outcome.OK, 0.001)

    threads = []
    for n in range(4):
        threads.append(threading.Thread(target=wait_turn, args=(n,)))
        threads[-1].start()
        while len(limiter._waiters) < n + 1:
            time.sleep(0.001)
    started = time.monotonic()
    assert limiter.acquire(time.monotonic() + 0.05) is None  # the slot stays taken: gives up
    assert 0.04 <= time.monotonic() - started < 2
    limiter.release(held, Outcome.OK, 0.001)
    for thread in threads:
        thread.join(5)
    assert order == [0, 1, 2, 3]


def test_the_host_gate_bounds_every_key_together() -> None:
    gate = HostGate(2)
    assert gate.acquire() and gate.acquire()
    assert not gate.acquire(time.monotonic() + 0.02)
    gate.release()
    assert gate.acquire(time.monotonic() + 0.02)


def test_one_limiter_per_key_named_by_a_hash() -> None:
    key = "sk-live-registry-test-0123456789"
    one = limiter_for("http://127.0.0.1:1", key, 4, 32)
    assert limiter_for("http://127.0.0.1:1", key, 8, 16) is one and one.maximum == 16
    assert limiter_for("http://127.0.0.1:1", key + "x", 4, 32) is not one
    assert limiter_for("http://127.0.0.1:2", key, 4, 32) is not one
    names = list(pacing._limiters)
    assert key_id("http://127.0.0.1:1", key) in names
    assert not any(key in name for name in names) and key not in repr(one)
    assert AdaptiveLimiter(40, 32).level == 32  # a start above the maximum starts at it


# -- against the simulator ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_rate_limited_key_is_read_at_its_rate_with_few_429s_and_no_failure(
    simulated: Start,
) -> None:
    rate = 25
    company = Scenario.named("small").with_company("acme", history_days=60, entries_per_day=370)
    s = simulated(company, network=NetworkSpec(latency_ms=5, rate_limit_per_s=rate))
    started = time.monotonic()
    rows, stats, client = read_all(s, max_retries=2)
    took = time.monotonic() - started
    assert as_truth(rows) == truth_rows(s)
    requests = client.requests_sent
    assert requests >= 220 and stats.pages >= 210
    assert client.throttled == s.sim.traffic.rate_limited == stats.throttled
    assert client.throttled < 0.1 * requests, client.throttled  # no 429 storms
    assert client.retries == client.throttled  # every retry was a 429 waited out, none failed
    floor = (requests - rate) / rate  # the bucket starts full: a second's worth is free
    assert floor * 0.9 <= took <= floor * 1.6 + 1, (took, floor)
    assert client.limiter.measured_rate == pytest.approx(rate, rel=0.5)


def test_without_a_limit_the_level_climbs_above_its_start(simulated: Start) -> None:
    company = Scenario.named("small").with_company("acme", history_days=30, entries_per_day=400)
    s = simulated(company, network=NetworkSpec(latency_ms=40))
    rows, _, client = read_all(s, concurrency=2)
    assert as_truth(rows) == truth_rows(s)
    assert client.throttled == 0 and client.limiter.rate is None
    assert client.peak_concurrency >= 6 and client.concurrency_level > 2


def test_a_429_with_retry_after_does_not_use_up_max_retries(simulated: Start) -> None:
    s = simulated("small")
    s.sim.faults.script(*[Fault("429", path="/Consumption", retry_after=1) for _ in range(4)])
    clock = Clock()
    with s.client(max_retries=1) as client:
        client.limiter = AdaptiveLimiter(4, 32, clock=clock)  # sleeping advances its clock
        client._sleep = clock.advance
        assert "balance" in client.get_json("/Consumption")
    assert client.throttled == 4 and client.retries == 4 and client.requests_sent == 5
    assert clock() == pytest.approx(1004.0, abs=0.01)  # each Retry-After waited out in full


def test_no_retry_at_all_means_a_429_is_answered_at_once(simulated: Start) -> None:
    s = simulated("small")
    s.sim.faults.script(Fault("429", path="/Consumption", retry_after=30))
    started = time.monotonic()
    with s.client(max_retries=0) as client, pytest.raises(RateLimited):
        client.get_json("/Consumption")
    assert client.requests_sent == 1 and time.monotonic() - started < 5


LONG = Scenario.named("small").with_company("acme", history_days=100, entries_per_day=20)


def _jobs(s: Simulated, tmp: Path, **over: Any) -> tuple[Any, list[WindowJob]]:
    client = s.client(max_window_days=30, worker_min_entries=0, **over)
    owner = LedgerStaging(tmp / "run", s.company, "run")
    windows = LedgerReader(client).windows(s.first_day, s.today)
    settings = client.settings
    return client, [
        WindowJob(settings, w, s.company, "run", owner.fetched_at, owner.directory) for w in windows
    ]


def test_windows_read_in_threads_come_back_in_window_order(
    simulated: Start, tmp_path: Path
) -> None:
    s = simulated(LONG)
    client, jobs = _jobs(s, tmp_path)
    with client:
        staged = stage_windows(jobs, client, processes=1)
    assert [w.window for w in staged] == [job.window for job in jobs] and len(staged) >= 4
    assert sum(w.fetched for w in staged) == len(s.sim.truth(s.company).entries)
    assert sum(w.requests for w in staged) == client.requests_sent


def test_a_window_failing_beside_others_is_the_error_raised(
    simulated: Start, tmp_path: Path
) -> None:
    s = simulated(LONG)
    third = str(s.first_day + timedelta(days=60))
    s.sim.faults.respond(
        {"type": "about:blank", "title": "Unauthorized", "status": 401, "detail": "key revoked"},
        status=401,
        content_type="application/problem+json",
        match=lambda query: query.get("startDate", "").startswith(third),
    )
    client, jobs = _jobs(s, tmp_path)
    with client, pytest.raises(Unauthorized) as failure:
        stage_windows(jobs, client, processes=1)
    assert failure.value.detail == "key revoked"


@pytest.mark.parametrize("limit", ["rate-limited", "far"])
def test_no_worker_process_when_the_network_is_the_limit(
    simulated: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str
) -> None:
    if limit == "far":  # 8 in flight over 30 ms: ~270 pages a second, one process parses more
        s = simulated(LONG, network=NetworkSpec(latency_ms=30))
        client, jobs = _jobs(s, tmp_path, max_concurrency=8)
    else:
        s = simulated(LONG)
        s.sim.faults.script(Fault("429", path="/Consumption", retry_after=1))
        client, jobs = _jobs(s, tmp_path)
        client.get_json("/Consumption")  # one 429, waited out
        assert client.throttled == 1

    def no_workers(*_: object) -> None:
        raise AssertionError("a worker process was started where the network is the limit")

    monkeypatch.setattr(window_workers, "_workers", no_workers)
    with client:
        staged = stage_windows(jobs, client, processes=3)
    assert sum(w.fetched for w in staged) == len(s.sim.truth(s.company).entries)
