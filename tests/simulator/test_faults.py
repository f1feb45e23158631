"""Each fault kind over real HTTP, by script, by rate, by hook, and from a scenario file."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from simulator import Fault, Scenario, Simulator
from tests.simulator.conftest import LEDGER, NOW, Served, Start, decimal_json

WINDOW = {"startDate": "2025-03-01", "endDate": "2025-03-15", "pageSize": 10}


@pytest.fixture
def served(start: Start) -> Served:
    return start("small")


def test_429_with_retry_after(served: Served) -> None:
    served.sim.faults.script(Fault("429", retry_after=7))
    with served.client() as client:
        limited = client.get(LEDGER, params=WINDOW)
        ok = client.get(LEDGER, params=WINDOW)
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "7"
    assert limited.headers["content-type"] == "application/problem+json"
    body = limited.json()
    assert (body["status"], body["title"], body["instance"]) == (429, "Too Many Requests", LEDGER)
    assert ok.status_code == 200
    assert served.sim.faults.fired == [("429", LEDGER)]


@pytest.mark.parametrize(
    ("kind", "title"),
    [("500", "Internal Server Error"), ("502", "Bad Gateway"), ("503", "Service Unavailable")],
)
def test_server_errors_are_problem_details(served: Served, kind: str, title: str) -> None:
    served.sim.faults.script(Fault(kind, path="/Subscription"))
    with served.client() as client:
        assert client.get(LEDGER, params=WINDOW).status_code == 200  # other path: untouched
        failed = client.get("/Subscription")
        assert client.get("/Subscription").status_code == 200
    assert failed.status_code == int(kind)
    assert failed.headers["content-type"] == "application/problem+json"
    assert failed.json()["title"] == title
    assert failed.json()["instance"] == "/Subscription"


def test_timeout_then_normal_service(served: Served) -> None:
    served.sim.faults.script(Fault("timeout", delay=2.0))
    with served.client() as client:
        with pytest.raises(httpx.ReadTimeout):
            client.get(LEDGER, params=WINDOW, timeout=0.2)
        assert client.get(LEDGER, params=WINDOW).status_code == 200


def test_a_delay_shorter_than_the_timeout_still_answers(served: Served) -> None:
    served.sim.faults.script(Fault("timeout", delay=0.05))
    with served.client() as client:
        assert client.get(LEDGER, params=WINDOW, timeout=5).status_code == 200


def test_connection_reset_without_a_response(served: Served) -> None:
    served.sim.faults.script(Fault("reset"))
    with served.client() as client:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            client.get(LEDGER, params=WINDOW)
        assert client.get(LEDGER, params=WINDOW).status_code == 200


def test_truncated_json(served: Served) -> None:
    served.sim.faults.script(Fault("truncated"))
    with served.client() as client:
        cut = client.get(LEDGER, params=WINDOW)
        whole = client.get(LEDGER, params=WINDOW)
    assert cut.status_code == 200
    assert int(cut.headers["content-length"]) == len(cut.content)
    assert whole.content.startswith(cut.content)
    assert len(cut.content) == len(whole.content) // 2
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut.content)


def test_malformed_json(served: Served) -> None:
    served.sim.faults.script(Fault("malformed", path="/Consumption"))
    with served.client() as client:
        bad = client.get("/Consumption")
    assert bad.status_code == 200
    assert bad.headers["content-type"] == "application/json"
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad.content)


def test_page_drift_adds_real_entries_at_now(served: Served) -> None:
    sim = served.sim
    before = sim.truth("acme")
    with served.client() as client:
        first = client.get(LEDGER, params={**WINDOW, "pageNumber": 1}).json()
        sim.faults.script(Fault("drift", drift_entries=3))
        second = client.get(LEDGER, params={**WINDOW, "pageNumber": 2}).json()
        summary = decimal_json(client.get("/Consumption"))
    after = sim.truth("acme")
    assert second["total"] == first["total"] + 3
    assert second["data"][:3] == first["data"][7:10]  # everything shifted by three
    new = after.entries[-3:]
    assert all(e["createdAt"] == NOW and e["type"] == "Usage" for e in new)
    assert len(after.entries) == len(before.entries) + 3
    assert after.entries[:-3] == before.entries
    assert new[0]["balanceAfter"] == before.balance + new[0]["signedAmount"]
    assert summary["balance"] == after.balance == new[-1]["balanceAfter"]
    assert after.hidden_movements == []


def test_drift_keeps_later_entries_continuous(served: Served) -> None:
    sim = served.sim
    sim.add_entries_now("acme", 2)
    sim.clock.advance(timedelta(hours=6))  # entries generated earlier for the afternoon appear
    entries = sim.truth("acme").entries
    for prev, entry in itertools.pairwise(entries):
        assert entry["balanceAfter"] == prev["balanceAfter"] + entry["signedAmount"]


def test_body_hook_serves_given_bodies_to_matching_requests(served: Served) -> None:
    lying = {"data": [], "total": 999_999, "pageNumber": 2, "pageSize": 10}
    served.sim.faults.respond(lying, match=lambda q: q.get("pageNumber") == "2", times=2)
    served.sim.faults.respond(b'{"data": [{"amount": NaN}]}', status=200, path="/Consumption")
    with served.client() as client:
        page1 = client.get(LEDGER, params={**WINDOW, "pageNumber": 1})
        hooked = [client.get(LEDGER, params={**WINDOW, "pageNumber": 2}) for _ in range(3)]
        nan = client.get("/Consumption")
    assert page1.json()["total"] != 999_999
    assert [r.json()["total"] for r in hooked[:2]] == [999_999, 999_999]
    assert hooked[2].json()["total"] == page1.json()["total"]
    assert nan.content == b'{"data": [{"amount": NaN}]}'


def test_rate_mode_is_seeded(start: Start) -> None:
    def statuses(served: Served) -> list[int]:
        served.sim.faults.set_rate(0.5, ["429", "503"], path=LEDGER, seed=3, retry_after=0)
        with served.client() as client:
            return [client.get(LEDGER, params=WINDOW).status_code for _ in range(40)]

    first, second = statuses(start("small")), statuses(start("small"))
    assert first == second
    assert set(first) == {200, 429, 503}


def test_clear_stops_every_fault(served: Served) -> None:
    faults = served.sim.faults
    faults.set_rate(1.0, ["500"])
    faults.script(Fault("429"))
    faults.respond({"x": 1})
    faults.clear()
    with served.client() as client:
        assert client.get(LEDGER, params=WINDOW).status_code == 200
    assert faults.pending_script == 0


def test_openapi_is_never_faulted(served: Served) -> None:
    served.sim.faults.set_rate(1.0, ["500"])
    assert httpx.get(served.url + "/openapi.json").status_code == 200


def test_unknown_fault_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        Fault("418")


def test_faults_from_a_scenario_file(tmp_path: Path, start: Start) -> None:
    path = tmp_path / "faulty.yaml"
    path.write_text(
        "preset: small\n"
        "faults:\n"
        "  script:\n"
        "    - {kind: '503', path: /Consumption/transactions, retry_after: 2}\n"
        "    - {kind: body, path: /Campaign, status: 200, body: [{id: x, name: 1}]}\n"
    )
    served = start(Scenario.load(path))
    with served.client() as client:
        unavailable = client.get(LEDGER, params=WINDOW)
        campaigns = client.get("/Campaign")
        assert client.get(LEDGER, params=WINDOW).status_code == 200
    assert unavailable.status_code == 503 and unavailable.headers["retry-after"] == "2"
    assert campaigns.json() == [{"id": "x", "name": 1}]


def test_faults_change_no_truth() -> None:
    sim = Simulator("small", now=NOW)
    before = sim.truth("acme")
    sim.faults.set_rate(1.0, ["429", "500", "truncated", "malformed", "reset", "body"])
    assert sim.truth("acme") == before
