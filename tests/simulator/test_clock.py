"""The clock: moving it appends days without changing old ones; snapshots follow it."""

from __future__ import annotations

from datetime import timedelta

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
