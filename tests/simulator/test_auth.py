"""X-Api-Key on every request: 401 for missing/unknown/revoked, 403 for campaign-only keys,
and each company sees only its own data."""

from __future__ import annotations

import httpx
import pytest

from simulator import KeySpec, Scenario, Simulator
from tests.simulator.conftest import LEDGER, NOW, Served, Start, decimal_json

BILLING = [LEDGER, "/Consumption", "/Consumption/breakdown", "/Subscription"]
EVERY = [*BILLING, "/Campaign"]
WINDOW = {"startDate": "2025-01-01", "endDate": "2025-03-15"}


def assert_problem(
    response: httpx.Response, status: int, title: str, detail: str, path: str
) -> None:
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status
    assert body["title"] == title
    assert body["detail"] == detail
    assert body["instance"] == path
    assert body["type"].startswith("https://tools.ietf.org/html/")


@pytest.mark.parametrize("path", EVERY)
def test_missing_key(small: Served, path: str) -> None:
    response = httpx.get(small.url + path, params=WINDOW)
    assert_problem(response, 401, "Unauthorized", "The X-Api-Key header is missing.", path)


@pytest.mark.parametrize("path", EVERY)
def test_unknown_key_is_never_echoed(small: Served, path: str) -> None:
    secret = "sk_live_made_up_0123456789"
    with small.client(key=secret) as client:
        response = client.get(path, params=WINDOW)
    assert_problem(response, 401, "Unauthorized", "The API key is unknown.", path)
    assert secret not in response.text


@pytest.mark.parametrize("path", EVERY)
def test_revoked_key(small: Served, path: str) -> None:
    revoked = small.sim.key_for("acme", revoked=True)
    with small.client(key=revoked) as client:
        response = client.get(path, params=WINDOW)
    assert_problem(response, 401, "Unauthorized", "The API key has been revoked.", path)
    assert revoked not in response.text


@pytest.mark.parametrize("path", BILLING)
def test_campaign_only_key_is_forbidden_on_billing(small: Served, path: str) -> None:
    with small.client(key=small.sim.key_for("acme", "campaigns")) as client:
        response = client.get(path, params=WINDOW)
    detail = "This API key is restricted to campaigns; billing data is not available."
    assert_problem(response, 403, "Forbidden", detail, path)


def test_campaign_only_key_reads_campaigns(small: Served) -> None:
    with small.client(key=small.sim.key_for("acme", "campaigns")) as client:
        response = client.get("/Campaign")
    assert response.status_code == 200
    assert response.json() == small.sim.campaigns("acme")


def test_the_demo_key_reads_the_first_company(small: Served) -> None:
    with small.client(key="demo-key") as client:
        assert client.get("/Consumption").status_code == 200


def test_openapi_needs_no_key(small: Served) -> None:
    response = httpx.get(small.url + "/openapi.json")
    assert response.status_code == 200
    assert response.json()["openapi"].startswith("3.")


def test_each_company_reads_only_its_own_data(start: Start) -> None:
    served = start("two_companies")
    sim = served.sim
    for company in ("acme", "globex"):
        truth = sim.truth(company)
        with served.client(company) as client:
            entries = served.all_pages(client, WINDOW)
            campaigns = client.get("/Campaign").json()
            balance = decimal_json(client.get("/Consumption"))["balance"]
        expected = [e for e in truth.entries if e["createdAt"].date().isoformat() >= "2025-01-01"]
        assert len(entries) == len(expected)
        assert {e["balanceAfter"] for e in entries} == {e["balanceAfter"] for e in expected}
        assert campaigns == sim.campaigns(company)
        assert balance == truth.balance
    acme_agents = {e["agentId"] for e in sim.truth("acme").entries} - {None}
    globex_agents = {e["agentId"] for e in sim.truth("globex").entries} - {None}
    assert acme_agents and globex_agents and not acme_agents & globex_agents


def test_keys_never_appear_in_reprs() -> None:
    keys = [KeySpec(label="given", secret="sk_given_secret_0001"), KeySpec(label="derived")]
    scenario = Scenario.named("two_companies").with_company("globex", keys=keys)
    sim = Simulator(scenario, now=NOW, demo_key="demo-secret-key")
    assert "sk_given_secret_0001" not in repr(scenario) + repr(scenario.company("globex"))
    text = repr(sim.companies) + repr(sim) + str(sim.companies[0].keys[0])
    for company in sim.companies:
        for key in company.keys:
            assert key.secret not in text
            assert key.fingerprint in text
    assert "demo-secret-key" not in repr(sim.scenario)
