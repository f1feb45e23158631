"""Latency and per-key rate limits over real HTTP: concurrent round trips overlap, a burst past
the bucket gets the platform's 429, and the traffic counters say what a benchmark must report."""

from __future__ import annotations

import asyncio
import time

import httpx

from simulator import Fault, NetworkSpec, Simulator, serve
from tests.simulator.conftest import LEDGER, NOW, Served, Start

WINDOW = {"startDate": "2025-03-01", "endDate": "2025-03-15", "pageSize": 10}


def parallel(url: str, key: str, paths: list[str]) -> tuple[float, list[httpx.Response]]:
    """All requests in flight at once (one connection each); wall time and responses."""

    async def run() -> list[httpx.Response]:
        headers = {"X-Api-Key": key}
        async with httpx.AsyncClient(base_url=url, headers=headers, verify=False) as client:
            return list(await asyncio.gather(*(client.get(p) for p in paths)))

    started = time.perf_counter()
    responses = asyncio.run(run())
    return time.perf_counter() - started, responses


def timed(client: httpx.Client, path: str, **kw: object) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    response = client.get(path, **kw)  # type: ignore[arg-type]
    return time.perf_counter() - started, response


# latency -----------------------------------------------------------------------------------


# Lower bounds allow a few ms: uvloop's timers count whole ms from the loop's cached time.


def test_latency_applies_to_every_route_and_does_not_serialize(start: Start) -> None:
    served = start("small", network=NetworkSpec(latency_ms=80))
    key = served.sim.key_for("acme")
    with served.client() as client:
        client.get("/Campaign")  # the connection is open: what follows is the latency alone
        for path in ("/Consumption", "/Subscription", "/openapi.json"):
            elapsed, response = timed(client, path)
            assert response.status_code == 200
            assert elapsed >= 0.075, path
        elapsed, page = timed(client, LEDGER, params=WINDOW)
        assert page.status_code == 200 and elapsed >= 0.075
        elapsed, unauthorized = timed(client, "/Consumption", headers={"X-Api-Key": "nope"})
        assert unauthorized.status_code == 401 and elapsed >= 0.075
    wall, responses = parallel(served.url, key, ["/Consumption"] * 10)
    assert [r.status_code for r in responses] == [200] * 10
    assert 0.075 <= wall < 0.4, wall  # serialized it would be >= 0.8 s


def test_jitter_stays_within_its_bounds(start: Start) -> None:
    served = start("small", network=NetworkSpec(latency_ms=30, jitter_ms=20))
    with served.client() as client:
        client.get("/Campaign")
        elapsed = [timed(client, "/Consumption")[0] for _ in range(12)]
    assert min(elapsed) >= 0.008
    assert max(elapsed) < 0.05 + 0.25  # the upper bound plus a loaded machine's slack
    assert len({round(e, 3) for e in elapsed}) > 1  # jitter, not a constant


def test_loopback_by_default_and_settable_on_a_running_server(small: Served) -> None:
    sim = small.sim
    assert sim.network.spec == NetworkSpec() and not sim.network.has_latency
    client = small.shared()
    response = client.get("/Consumption")
    assert response.status_code == 200 and "ratelimit-limit" not in response.headers
    try:
        sim.network.configure(NetworkSpec(latency_ms=60, rate_limit_per_s=1, burst=1))
        elapsed, first = timed(client, "/Consumption")
        assert first.status_code == 200 and elapsed >= 0.055
        assert client.get("/Consumption").status_code == 429
    finally:
        sim.network.configure(NetworkSpec())
    assert client.get("/Consumption").status_code == 200


# rate limit --------------------------------------------------------------------------------


def test_a_burst_past_the_bucket_gets_429_then_service_resumes(start: Start) -> None:
    served = start("small", network=NetworkSpec(rate_limit_per_s=2, burst=3))
    with served.client() as client:
        answers = [client.get(LEDGER, params=WINDOW) for _ in range(5)]
        assert [r.status_code for r in answers] == [200, 200, 200, 429, 429]
        limited = answers[3]
        assert limited.headers["content-type"] == "application/problem+json"
        assert int(limited.headers["retry-after"]) >= 1
        body = limited.json()
        assert (body["status"], body["title"], body["instance"]) == (
            429,
            "Too Many Requests",
            LEDGER,
        )
        assert body["detail"] == "Rate limit exceeded; retry after 1 seconds."
        time.sleep(int(limited.headers["retry-after"]))
        assert client.get(LEDGER, params=WINDOW).status_code == 200
    traffic = served.sim.traffic
    assert (traffic.requests, traffic.rate_limited) == (6, 2)
    per_key = traffic.for_key(served.sim.key_for("acme"))
    assert (per_key.requests, per_key.rate_limited, per_key.statuses) == (6, 2, {200: 4, 429: 2})


def test_retry_after_is_the_ceiling_of_the_wait_for_a_token(start: Start) -> None:
    served = start("small", network=NetworkSpec(rate_limit_per_s=0.4, burst=1))
    with served.client() as client:
        assert client.get("/Subscription").status_code == 200
        limited = client.get("/Subscription")
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "3"  # 2.5 s until the next token


def test_concurrent_requests_share_one_bucket(start: Start) -> None:
    served = start("small", network=NetworkSpec(latency_ms=20, rate_limit_per_s=1, burst=4))
    _, responses = parallel(served.url, served.sim.key_for("acme"), ["/Consumption"] * 10)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 4 + [429] * 6
    assert served.sim.traffic.rate_limited == 6


def test_a_steady_client_at_the_rate_never_sees_429(start: Start) -> None:
    served = start("small", network=NetworkSpec(rate_limit_per_s=10, burst=2))
    with served.client() as client:
        statuses = []
        for _ in range(14):
            statuses.append(client.get("/Consumption").status_code)
            time.sleep(0.1)
    assert statuses == [200] * 14
    assert served.sim.traffic.rate_limited == 0


def test_keys_do_not_share_a_bucket(start: Start) -> None:
    served = start("two_companies", network=NetworkSpec(rate_limit_per_s=0.5, burst=1))
    sim = served.sim
    acme, globex, demo = sim.key_for("acme"), sim.key_for("globex"), "demo-key"
    with served.client("acme") as client:
        assert client.get("/Consumption").status_code == 200
        assert client.get("/Consumption").status_code == 429
    with served.client("globex") as client:
        assert client.get("/Consumption").status_code == 200
    with served.client(key=demo) as client:  # acme's other key: its own bucket
        assert client.get("/Consumption").status_code == 200
    assert sim.traffic.for_key(acme).statuses == {200: 1, 429: 1}
    assert sim.traffic.for_key(globex).statuses == {200: 1}
    assert sim.traffic.for_key(demo).statuses == {200: 1}
    assert all(k.company in ("acme", "globex") for k in sim.traffic.per_key())


def test_auth_comes_before_the_limit(start: Start) -> None:
    served = start("small", network=NetworkSpec(rate_limit_per_s=0.5, burst=1))
    sim = served.sim
    revoked = sim.key_for("acme", revoked=True)
    for key in ("sk_made_up", revoked, ""):
        with served.client(key=key) as client:
            assert [client.get("/Consumption").status_code for _ in range(3)] == [401] * 3
    assert sim.traffic.rate_limited == 0
    assert sim.traffic.unauthenticated.statuses == {401: 6}  # made-up and missing keys
    campaigns = sim.key_for("acme", scope="campaigns")  # a valid key: limited like any other
    with served.client(key=campaigns) as client:
        assert client.get("/Consumption").status_code == 403
        assert client.get("/Campaign").status_code == 429
    with served.client() as client:  # none of the above touched the full key's bucket
        assert client.get("/Consumption").status_code == 200


def test_openapi_is_not_limited(start: Start) -> None:
    served = start("small", network=NetworkSpec(rate_limit_per_s=0.5, burst=1))
    with served.client() as client:
        assert [client.get("/openapi.json").status_code for _ in range(4)] == [200] * 4
        assert client.get("/Campaign").status_code == 200


def test_the_limiter_and_the_429_fault_answer_alike(start: Start) -> None:
    served = start("small", network=NetworkSpec(rate_limit_per_s=0.5, burst=1))
    sim = served.sim
    sim.faults.script(Fault("429", path="/Subscription"), Fault("503", path="/Campaign"))
    with served.client() as client:
        faulted = client.get("/Subscription")
        limited = client.get("/Campaign")  # refused by the limiter: the 503 stays queued
    assert sim.faults.pending_script == 1
    assert faulted.status_code == limited.status_code == 429
    for response in (faulted, limited):
        assert response.headers["content-type"] == "application/problem+json"
        assert int(response.headers["retry-after"]) >= 1
    assert faulted.json().keys() == limited.json().keys()
    assert sim.traffic.total().statuses == {429: 2}
    assert sim.traffic.rate_limited == 1  # only the limiter's
    sim.faults.clear()


def test_rate_limit_headers_on_request(start: Start) -> None:
    network = NetworkSpec(rate_limit_per_s=1, burst=3, rate_limit_headers=True)
    served = start("small", network=network)
    with served.client() as client:
        answers = [client.get(LEDGER, params=WINDOW) for _ in range(4)]
    assert [r.status_code for r in answers] == [200, 200, 200, 429]
    assert [r.headers["ratelimit-limit"] for r in answers] == ["3"] * 4
    assert [r.headers["ratelimit-remaining"] for r in answers] == ["2", "1", "0", "0"]
    assert all(1 <= int(r.headers["ratelimit-reset"]) <= 3 for r in answers)


def test_serve_takes_the_network_too() -> None:
    sim = Simulator("small", now=NOW)
    with serve(sim, network=NetworkSpec(rate_limit_per_s=0.5, burst=1)) as server:
        headers = {"X-Api-Key": sim.key_for("acme")}
        with httpx.Client(base_url=server.url, headers=headers, verify=False) as client:
            assert [client.get("/Campaign").status_code for _ in range(2)] == [200, 429]
    assert sim.network.spec.effective_burst == 1
