"""Fixtures for the simulator's own tests: real servers on loopback, a fixed clock."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

from simulator import Scenario, ServerHandle, Simulator, serve

NOW = datetime(2025, 3, 15, 12, 0, tzinfo=UTC)
LEDGER = "/Consumption/transactions"


def decimal_json(response: httpx.Response) -> Any:
    """Numbers parsed from their text, never through float."""
    return json.loads(response.text, parse_float=Decimal, parse_int=Decimal)


@dataclass
class Served:
    sim: Simulator
    server: ServerHandle
    _shared: httpx.Client | None = None

    def shared(self) -> httpx.Client:
        """One client with the first company's full key, reused (building one costs ~ms)."""
        if self._shared is None:
            self._shared = self.client()
        return self._shared

    def close(self) -> None:
        if self._shared is not None:
            self._shared.close()

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, company: str | None = None, key: str | None = None, **kw: Any) -> httpx.Client:
        company = company or self.sim.companies[0].name
        secret = key if key is not None else self.sim.key_for(company)
        # Plain HTTP on loopback: skip building a TLS context (~0.1 s per client under load).
        kw.setdefault("verify", False)
        return httpx.Client(base_url=self.url, headers={"X-Api-Key": secret}, **kw)

    def all_pages(
        self, client: httpx.Client, params: dict[str, Any], page_size: int = 100
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        page = 1
        while True:
            response = client.get(
                LEDGER, params={**params, "pageSize": page_size, "pageNumber": page}
            )
            assert response.status_code == 200, response.text
            body = decimal_json(response)
            out.extend(body["data"])
            if len(out) >= body["total"] or not body["data"]:
                assert len(out) == body["total"]
                return out
            page += 1


Start = Callable[..., Served]


def _stop_in_background(stack: ExitStack) -> None:
    """Each server takes uvicorn's ticks (0.2 s, a second with a connection held open) to stop,
    and nothing after the test reads it: it stops in a thread while the next test starts, each
    server on its own port (as tests/conftest.py's ``simulated`` does)."""
    threading.Thread(target=stack.close, name="simulator-stop", daemon=True).start()


@pytest.fixture
def start() -> Iterator[Start]:
    """Starts a simulator for a scenario (name or object) and serves it until the test ends."""
    servers = ExitStack()
    clients: list[Served] = []

    def run(scenario: str | Scenario = "small", seed: int = 0, **kwargs: Any) -> Served:
        kwargs.setdefault("now", NOW)
        sim = Simulator(scenario, seed=seed, **kwargs)
        served = Served(sim, servers.enter_context(serve(sim)))
        clients.append(served)
        return served

    try:
        yield run
    finally:
        for served in reversed(clients):
            served.close()  # the test's clients now, then the servers behind them
        _stop_in_background(servers)


@pytest.fixture(scope="module")
def small() -> Iterator[Served]:
    """One shared small scenario per module; tests must not move its clock or leave faults."""
    sim = Simulator("small", seed=0, now=NOW)
    servers = ExitStack()
    served = Served(sim, servers.enter_context(serve(sim)))
    try:
        yield served
    finally:
        served.close()
        sim.faults.clear()
        _stop_in_background(servers)
