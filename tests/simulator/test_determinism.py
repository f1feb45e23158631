"""Same seed, scenario and now: byte-identical responses. Another seed: another history."""

from __future__ import annotations

from tests.simulator.conftest import LEDGER, Start

PATHS = ["/Consumption", "/Consumption/breakdown", "/Subscription", "/Campaign"]
PAGES = [
    {"startDate": "2024-12-01", "endDate": "2025-03-15", "pageSize": 100, "pageNumber": n}
    for n in (1, 7, 30)
]


def responses(served, key: str | None = None) -> list[bytes]:
    with served.client(key=key) as client:
        out = [client.get(LEDGER, params=p).content for p in PAGES]
        return out + [client.get(path).content for path in PATHS]


def test_same_inputs_same_bytes(start: Start) -> None:
    first = start("two_companies", seed=7)
    second = start("two_companies", seed=7)
    assert first.sim.key_for("acme") == second.sim.key_for("acme")
    assert responses(first) == responses(second)
    assert responses(first, first.sim.key_for("globex")) == responses(
        second, second.sim.key_for("globex")
    )


def test_another_seed_another_history(start: Start) -> None:
    first = start("small", seed=1)
    second = start("small", seed=2)
    assert responses(first)[0] != responses(second)[0]
    assert first.sim.key_for("acme") != second.sim.key_for("acme")
