"""The ground truth: continuous balances except at injected gaps, snapshots that agree with it,
and the wire agreeing with the truth to the last digit."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from simulator import Scenario, Simulator
from simulator.truth import GroundTruth
from tests.simulator.conftest import NOW, Served, Start, decimal_json


def gaps(truth: GroundTruth) -> dict[int, Decimal]:
    """Position -> observed - expected balance, recomputed from the entries alone."""
    out = {}
    entries = truth.entries
    for before, after in itertools.pairwise(entries):
        expected = before["balanceAfter"] + after["signedAmount"]
        if after["balanceAfter"] != expected:
            out[before["position"]] = after["balanceAfter"] - expected
    if truth.balance != entries[-1]["balanceAfter"]:
        out[entries[-1]["position"]] = truth.balance - entries[-1]["balanceAfter"]
    return out


def test_balances_are_continuous_without_hidden_movements(small: Served) -> None:
    truth = small.sim.truth("acme")
    assert gaps(truth) == {}
    assert truth.hidden_movements == []
    first = truth.entries[0]
    assert first["balanceAfter"] == truth.opening_balance + first["signedAmount"]
    assert [e["position"] for e in truth.entries] == list(range(len(truth.entries)))


def test_hidden_movements_are_exactly_where_injected() -> None:
    sim = Simulator("hidden_movements", now=NOW)
    truth = sim.truth("acme")
    found = gaps(truth)
    reported = {m.position: m for m in truth.hidden_movements}
    assert found == {p: m.gap for p, m in reported.items()}
    assert sorted(m.gap for m in truth.hidden_movements) == sorted(
        Decimal(x) for x in ("25", "-10.5", "5.125", "-7.25")
    )
    by_gap = {m.gap: m for m in truth.hidden_movements}
    entries = truth.entries

    after_index = by_gap[Decimal(25)]
    assert after_index.position == 100

    in_tie = by_gap[Decimal("-10.5")]
    assert in_tie.before_created_at == in_tie.after_created_at  # inside one tie group
    group_starts = [
        e["position"]
        for prev, e, nxt in zip(entries, entries[1:], entries[2:], strict=False)
        if e["createdAt"] == nxt["createdAt"] != prev["createdAt"]
    ]
    assert in_tie.position == group_starts[3]

    boundary = by_gap[Decimal("5.125")]
    day = (NOW - timedelta(days=40)).date()
    assert boundary.before_created_at is not None and boundary.after_created_at is not None
    assert boundary.before_created_at.date() == day
    assert boundary.after_created_at.date() > day
    assert entries[boundary.position + 1]["createdAt"].date() > day

    at_end = by_gap[Decimal("-7.25")]
    assert at_end.at_end and at_end.position == entries[-1]["position"]
    assert at_end.expected_balance == entries[-1]["balanceAfter"]
    assert at_end.observed_balance == truth.balance
    for movement in truth.hidden_movements:
        assert movement.gap == movement.observed_balance - movement.expected_balance


def test_a_hidden_movement_at_a_timestamp(start: Start) -> None:
    from simulator import HiddenMovementSpec

    at = NOW - timedelta(days=10, hours=3)
    scenario = Scenario.named("small").with_company(
        "acme", hidden_movements=[HiddenMovementSpec(amount=Decimal("-0.0001"), at=at)]
    )
    truth = Simulator(scenario, now=NOW).truth("acme")
    (movement,) = truth.hidden_movements
    assert movement.gap == Decimal("-0.0001")
    assert movement.before_created_at is not None and movement.before_created_at <= at
    assert movement.after_created_at is not None and movement.after_created_at > at


def test_consumption_agrees_with_the_truth(start: Start) -> None:
    served = start("hidden_movements")
    truth = served.sim.truth("acme")
    with served.client() as client:
        summary = decimal_json(client.get("/Consumption"))
    march = [e for e in truth.entries if e["createdAt"] >= truth.period_start]
    used = sum((-e["signedAmount"] for e in march if e["type"] == "Usage"), Decimal(0))
    assert summary == {
        "balance": truth.balance,
        "creditsUsed": used,
        "creditsIncluded": Decimal(10000),
        "periodStart": "2025-03-01T00:00:00Z",
        "periodEnd": "2025-04-01T00:00:00Z",
        "asOf": "2025-03-15T12:00:00Z",
    }
    assert truth.credits_used == used
    assert truth.balance == truth.entries[-1]["balanceAfter"] + Decimal("-7.25")


def breakdown_from(truth: GroundTruth) -> dict[tuple[Any, Any, Any], Decimal]:
    out: dict[tuple[Any, Any, Any], Decimal] = {}
    for e in truth.entries:
        if e["createdAt"] >= truth.period_start and e["type"] == "Usage":
            key = (e["agentId"], e["campaignId"], e["channel"])
            out[key] = out.get(key, Decimal(0)) + abs(e["signedAmount"])
    return out


def served_items(served: Served) -> dict[tuple[Any, Any, Any], Decimal]:
    with served.client() as client:
        body = decimal_json(client.get("/Consumption/breakdown"))
    assert (body["periodStart"], body["periodEnd"]) == (
        "2025-03-01T00:00:00Z",
        "2025-04-01T00:00:00Z",
    )
    items = body["items"]
    keys = [(i["agentId"], i["campaignId"], i["channel"]) for i in items]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    return {key: Decimal(i["credits"]) for key, i in zip(keys, items, strict=True)}


def test_breakdown_is_gross_usage_per_agent_campaign_channel(small: Served) -> None:
    truth = small.sim.truth("acme")
    expected = breakdown_from(truth)
    assert served_items(small) == expected == truth.breakdown
    assert sum(expected.values()) == truth.credits_used
    assert truth.breakdown_mismatches == []


def test_breakdown_mismatch_is_injected_and_reported(start: Start) -> None:
    served = start("breakdown_mismatch")
    truth = served.sim.truth("acme")
    expected = breakdown_from(truth)
    items = served_items(served)
    (mismatch,) = truth.breakdown_mismatches
    key = (mismatch.agent_id, mismatch.campaign_id, mismatch.channel)
    assert key == sorted(expected)[0]
    assert mismatch.delta == Decimal("12.5")
    assert items[key] == expected[key] + Decimal("12.5") == mismatch.served
    assert {k: v for k, v in items.items() if k != key} == {
        k: v for k, v in expected.items() if k != key
    }


def test_subscription_and_campaigns(small: Served) -> None:
    with small.client() as client:
        subscription = decimal_json(client.get("/Subscription"))
        campaigns = client.get("/Campaign").json()
    assert subscription == {
        "plan": "Growth",
        "status": "Active",
        "features": ["PhoneAgents", "ChatAgents"],
        "limits": {"monthlyCredits": 10000, "agents": 20, "concurrentCalls": 10},
        "currentPeriodStart": "2025-03-01T00:00:00Z",
        "currentPeriodEnd": "2025-04-01T00:00:00Z",
    }
    assert not any(word in str(subscription).lower() for word in ("price", "rate", "discount"))
    campaign_ids = {e["campaignId"] for e in small.sim.truth("acme").entries} - {None}
    assert campaign_ids <= {c["id"] for c in campaigns}
    assert all(set(c) == {"id", "name"} for c in campaigns)


def test_realistic_history(small: Served) -> None:
    truth = small.sim.truth("acme")
    entries = truth.entries
    types = Counter(e["type"] for e in entries)
    assert {"Usage", "PlanGrant", "Refund", "Adjustment"} <= set(types)
    assert 90 * 25 < len(entries) < 90 * 55
    grants = [e for e in entries if e["type"] == "PlanGrant"]
    assert [g["createdAtText"] for g in grants] == [
        "2024-12-16T00:00:00.000Z",  # the company's first credits open its ledger
        "2025-01-01T00:00:00.000Z",
        "2025-02-01T00:00:00.000Z",
        "2025-03-01T00:00:00.000Z",
    ]
    assert all(g["amount"] == 10000 for g in grants)
    for e in entries:
        assert e["amount"] == e["amount"].quantize(Decimal("0.0001"))
        conversational = e["type"] in ("Usage", "Refund")
        assert (e["channel"] is not None) == conversational
        assert (e["agentId"] is not None) == conversational
        assert e["hasDescription"] == (e["description"] != "")
        if e["type"] == "Usage":
            assert e["signedAmount"] <= 0
        if e["type"] in ("PlanGrant", "Refund", "Promotion", "TopUp"):
            assert e["signedAmount"] > 0
    assert any(not e["hasDescription"] for e in entries)
    assert any(e["description"].startswith("Phone call ") for e in entries)
    adjustments = {e["signedAmount"] > 0 for e in entries if e["type"] == "Adjustment"}
    assert adjustments == {True, False}


def test_ties_and_identical_pairs(small: Served) -> None:
    entries = small.sim.truth("acme").entries
    per_instant = Counter(e["createdAt"] for e in entries)
    tied = sum(n for n in per_instant.values() if n > 1)
    assert 0.01 < tied / len(entries) < 0.15
    assert max(per_instant.values()) <= 6
    fields = [tuple((k, v) for k, v in e.items() if k != "position") for e in entries]
    identical = [f for f, n in Counter(fields).items() if n > 1]
    assert identical
    assert all(dict(f)["amount"] == 0 for f in identical)


def test_top_ups_keep_a_busy_company_afloat() -> None:
    scenario = Scenario.named("small").with_company(
        "acme", entries_per_day=400, plan="Starter", history_days=45
    )
    truth = Simulator(scenario, now=NOW).truth("acme")
    top_ups = [e for e in truth.entries if e["type"] == "TopUp"]
    assert top_ups
    assert min(e["balanceAfter"] for e in truth.entries) > -1000
    assert gaps(truth) == {}


def test_the_wire_equals_the_truth(small: Served) -> None:
    truth = small.sim.truth("acme")
    with small.client() as client:
        served = small.all_pages(client, {"startDate": "2024-12-01", "endDate": "2025-03-15"})
    assert len(served) == len(truth.entries)
    for wire, true in zip(reversed(served), truth.entries, strict=True):
        assert wire["createdAt"] == true["createdAtText"]
        assert Decimal(wire["amount"]) == true["amount"]
        assert Decimal(wire["balanceAfter"]) == true["balanceAfter"]
        assert (wire["type"], wire["description"], wire["channel"]) == (
            true["type"],
            true["description"],
            true["channel"],
        )


def test_history_spans_the_configured_days(small: Served) -> None:
    entries = small.sim.truth("acme").entries
    assert entries[0]["createdAt"].date() >= date(2024, 12, 16)
    assert entries[0]["createdAt"].date() <= date(2024, 12, 17)
    assert entries[-1]["createdAt"] <= NOW
