"""Schemathesis against the simulator's own /openapi.json, with a valid key: no 5xx, and every
response conforms to the document (statuses, content types, schemas)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from simulator import Scenario, Simulator, serve
from simulator.openapi import openapi_document
from tests.simulator.conftest import NOW, Served


@schemathesis.check
def rejects_what_it_should(ctx: Any, response: Any, case: Any) -> bool | None:
    """Schemathesis' negative_data_rejection, except for a case whose negation was to leave
    out X-Api-Key: this test gives every request the key, so such a case reaches the server
    valid but for what else it negated. One that also added an unknown query key (which the
    simulator ignores, as the platform's API plausibly does, and which schemathesis itself
    forgives alone) was answered 200 and failed the suite by chance."""
    if "X-Api-Key" not in (case.headers or {}):
        return None
    return negative_data_rejection(ctx, response, case)


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    rejects_what_it_should,
]


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[Served]:
    sim = Simulator("small", now=NOW)
    with serve(sim) as server:
        yield Served(sim, server)


# Loaded from the same document the server serves (checked below), so collection needs no
# server; requests still go over loopback HTTP to the fixture's server.
schema = schemathesis.openapi.from_dict(openapi_document(Scenario.named("small")))


def test_the_served_document_is_the_fuzzed_one(fuzzed: Served) -> None:
    served = httpx.get(fuzzed.url + "/openapi.json").json()
    assert served == openapi_document(Scenario.named("small"))


@schema.parametrize()
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_server_errors_and_conformant_responses(case: Any, fuzzed: Served) -> None:
    case.call_and_validate(
        base_url=fuzzed.url, headers={"X-Api-Key": fuzzed.sim.key_for("acme")}, checks=CHECKS
    )
