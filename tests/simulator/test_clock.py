"""The clock: moving it appends days without changing old ones; snapshots follow it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from simulator import Scenario, Simulator
from tests.simulator.conftest import LEDGER, NOW, Start, decimal_json

OLD = {"startDate": "2025-02-01", "endDate": "2025-03-14", "pageSize": 100}


def test_advancing_appends_new_entries_and_keeps_old_pages(start: Start) -> None:
    served = start("small")
    sim = served.sim
    with served.client() as client:
        before = [client.get(LEDGER, params={**OLD, "pageNumber": n}).content for n in (1, 5, 9)]
        summary_before = decimal_json(client.get("/Consumption"))
        count_before = len(sim.truth("acme").entries)
        sim.clock.advance(timedelta(days=1))
        after = [client.get(LEDGER, params={**OLD, "pageNumber": n}).content for n in (1, 5, 9)]
        summary_after = decimal_json(client.get("/Consumption"))
        today = client.get(LEDGER, params={"startDate": "2025-03-16", "endDate": "2025-03-16"})
    assert before == after
    truth = sim.truth("acme")
    assert len(truth.entries) > count_before
    assert today.json()["total"] == len(
        [e for e in truth.entries if e["createdAt"] > NOW + timedelta(hours=12)]
    )
    assert summary_after["asOf"] == "2025-03-16T12:00:00Z"
    assert summary_after["balance"] == truth.balance != summary_before["balance"]
    assert summary_after["creditsUsed"] > summary_before["creditsUsed"]


def test_within_a_day_entries_appear_as_time_passes(start: Start) -> None:
    served = start("small")
    sim = served.sim
    sim.clock.set(NOW.replace(hour=6))
    morning = len(sim.truth("acme").entries)
    sim.clock.set(NOW.replace(hour=18))
    evening = sim.truth("acme").entries
    assert len(evening) > morning
    assert all(e["createdAt"] <= NOW.replace(hour=18) for e in evening)


def test_a_new_month_resets_the_period_and_grants_credits(start: Start) -> None:
    served = start("small")
    sim = served.sim
    sim.clock.set(NOW.replace(month=4, day=1, hour=0, minute=0))
    with served.client() as client:
        summary = decimal_json(client.get("/Consumption"))
        breakdown = client.get("/Consumption/breakdown").json()
    assert summary["periodStart"] == "2025-04-01T00:00:00Z"
    assert summary["creditsUsed"] == 0
    assert breakdown["items"] == []
    grants = [e for e in sim.truth("acme").entries if e["type"] == "PlanGrant"]
    assert grants[-1]["createdAtText"] == "2025-04-01T00:00:00.000Z"


def test_advancing_equals_starting_later() -> None:
    """A clock moved by a day serves what a simulator started a day later (with one more day of
    history, so both start on the same day) serves."""
    scenario = Scenario.named("small")
    moved = Simulator(scenario, now=NOW)
    moved.clock.advance(timedelta(days=1))
    later = Simulator(scenario.with_company("acme", history_days=91), now=NOW + timedelta(days=1))
    assert moved.truth("acme").entries == later.truth("acme").entries


def test_subscription_changes_over_successive_days(start: Start) -> None:
    served = start("plan_change")
    sim = served.sim
    seen = []
    with served.client() as client:
        for _ in range(3):
            body = decimal_json(client.get("/Subscription"))
            seen.append((body["plan"], body["status"], body["limits"]["monthlyCredits"]))
            sim.clock.advance(timedelta(days=1))
        sim.clock.set(NOW.replace(month=4, day=1, hour=1))
        included = decimal_json(client.get("/Consumption"))["creditsIncluded"]
    assert seen == [
        ("Growth", "Active", 10000),
        ("Scale", "Active", 50000),
        ("Scale", "PastDue", 50000),
    ]
    assert included == 50000
    grant = [e for e in sim.truth("acme").entries if e["type"] == "PlanGrant"][-1]
    assert (grant["createdAtText"], grant["amount"]) == ("2025-04-01T00:00:00.000Z", 50000)


def test_the_controls_move_the_clock_and_top_up_without_rewriting_the_past(start: Start) -> None:
    """docs/alerts.md's walkthrough: `POST /_simulator/clock?hours=N` and
    `POST /_simulator/top-up?company=C&amount=A`, loopback only; the clock never passes the
    real now, and what was served before is served the same after."""
    served = start("small")
    sim = served.sim
    with served.client() as client:
        before = client.get(LEDGER, params={**OLD, "pageNumber": 1}).content
        moved = client.post("/_simulator/clock", params={"hours": 6})
        assert moved.status_code == 200, moved.text
        assert moved.json()["now"] == (NOW + timedelta(hours=6)).isoformat()
        balance = decimal_json(client.get("/Consumption"))["balance"]
        topped = client.post("/_simulator/top-up", params={"company": "acme", "amount": "2500"})
        assert topped.status_code == 200, topped.text
        after = decimal_json(client.get("/Consumption"))["balance"]
        assert after == balance + 2500
        last = sim.truth("acme").entries[-1]
        assert (last["type"], Decimal(last["amount"])) == ("TopUp", Decimal(2500))
        assert client.get(LEDGER, params={**OLD, "pageNumber": 1}).content == before
        sim.clock.set(datetime.now(UTC) - timedelta(hours=1))
        future = client.post("/_simulator/clock", params={"hours": 2})
        assert future.status_code == 400 and "real now" in future.json()["detail"]
        for bad in ({"hours": "-1"}, {"hours": "soon"}):
            assert client.post("/_simulator/clock", params=bad).status_code == 400
        unknown = client.post("/_simulator/top-up", params={"company": "nobody", "amount": "5"})
        assert unknown.status_code == 400 and "nobody" in unknown.json()["detail"]
