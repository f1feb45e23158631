"""A real simulator over loopback, shared by the audit's probe tests; faults reset per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from simulator import Scenario, ServerHandle, Simulator, serve

# Keys with characters that URL-encoding changes, as keys drawn from base64 alphabets have.
KEYS = [
    {"label": "primary", "secret": "sk_sim+full/4f9c2a7e1b3d5f6a8c0e2b4d6f8a=="},
    {"label": "campaigns-only", "scope": "campaigns"},
    {"label": "old-revoked", "revoked": True},
]


@pytest.fixture(scope="module")
def sim() -> Simulator:
    company = {"name": "acme", "history_days": 5, "keys": KEYS}
    return Simulator(Scenario.named("small", companies=[company]))


@pytest.fixture(scope="module")
def server(sim: Simulator) -> Iterator[ServerHandle]:
    with serve(sim) as handle:
        yield handle


@pytest.fixture(autouse=True)
def _no_leftover_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "sim" in request.fixturenames:
        request.getfixturevalue("sim").faults.clear()
