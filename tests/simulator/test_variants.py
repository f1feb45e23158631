"""Wire variants a real deployment might differ in: sign convention, schema drift, names."""

from __future__ import annotations

import json
from decimal import Decimal

from tests.simulator.conftest import LEDGER, Served, Start, decimal_json

MARCH = {"startDate": "2025-03-01", "endDate": "2025-03-15"}
DEBIT_WORDS = ("usage", "debit", "expir")


def test_signed_debits_are_negative(small: Served) -> None:
    with small.client() as client:
        entries = small.all_pages(client, {"startDate": "2024-12-01", "endDate": "2025-03-15"})
    for e in entries:
        if e["type"] in ("Usage", "Expiry"):
            assert Decimal(e["amount"]) <= 0
        elif e["type"] in ("PlanGrant", "Refund", "TopUp"):
            assert Decimal(e["amount"]) > 0
    assert any(Decimal(e["amount"]) < 0 for e in entries if e["type"] == "Adjustment")


def test_unsigned_amounts_take_direction_from_the_type(start: Start) -> None:
    served = start("unsigned")
    truth = served.sim.truth("acme")
    with served.client() as client:
        entries = served.all_pages(client, {"startDate": "2024-12-01", "endDate": "2025-03-15"})
    entries.reverse()  # chronological
    types = {e["type"] for e in entries}
    assert "Adjustment" not in types
    assert {"AdjustmentCredit", "AdjustmentDebit"} <= types
    balance = truth.opening_balance
    for e in entries:
        amount = Decimal(e["amount"])
        assert amount >= 0
        debit = any(word in e["type"].lower() for word in DEBIT_WORDS)
        balance += -amount if debit else amount
        assert Decimal(e["balanceAfter"]) == balance
    assert [Decimal(e["amount"]) for e in entries] == [t["amount"] for t in truth.entries]


def test_schema_drift_is_deterministic_and_visible(start: Start) -> None:
    served = start("schema_drift")
    with served.client() as client:
        page = client.get(LEDGER, params={**MARCH, "pageSize": 100})
        summary = decimal_json(client.get("/Consumption"))
        breakdown = client.get("/Consumption/breakdown").json()
        again = client.get(LEDGER, params={**MARCH, "pageSize": 100})
        entries = served.all_pages(client, MARCH)
    assert page.content == again.content
    body = page.json()
    assert body["apiVersion"] == "v1.1" and body["hasMore"] is None
    assert all(e["currency"] == "credits" and e["ledgerVersion"] == 2 for e in entries)
    assert all("meta" in e and e["meta"] is None for e in entries)
    grant = next(e for e in entries if e["type"] == "PlanGrant")
    assert "channel" not in grant and "agentId" not in grant and "campaignId" not in grant
    without = [e for e in entries if not e["hasDescription"]]
    assert without and all(e.get("description") is None for e in without)
    truth = served.sim.truth("acme")
    assert "balance" not in summary and summary["currentBalance"] == truth.balance
    assert breakdown["apiVersion"] == "v1.1"
    assert all(t["description"] is None for t in truth.entries if not t["hasDescription"])


def test_hostile_campaign_names_are_served_as_data(start: Start) -> None:
    served = start("hostile_names")
    with served.client() as client:
        response = client.get("/Campaign")
    names = [c["name"] for c in response.json()]
    assert "<script>alert(1)</script>" in names
    assert '=HYPERLINK("http://x")' in names
    assert response.headers["content-type"] == "application/json"
    assert json.loads(response.text) == served.sim.campaigns("acme")
