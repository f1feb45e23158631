"""Shared fixtures: the real simulator over loopback HTTP and real DuckDB files.

``simulated`` starts a simulator for a scenario and tears it down; ``creditlens_env`` points
every CREDITLENS_* variable at it and at a fresh warehouse under tmp_path, the way a user's
shell would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from pipelines.api.client import PlatformClient
from pipelines.api.settings import ApiSettings
from pipelines.settings import Settings
from simulator import Scenario, ServerHandle, Simulator, serve


@dataclass
class Simulated:
    sim: Simulator
    server: ServerHandle
    company: str
    key: str

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def first_day(self) -> date:
        spec = self.sim.scenario.company(self.company)
        return (self.sim.clock.now - timedelta(days=spec.history_days - 1)).date()

    @property
    def today(self) -> date:
        return self.sim.clock.now.date()

    def client(self, **overrides: Any) -> PlatformClient:
        options: dict[str, Any] = {"backoff_base_s": 0.01, "backoff_max_s": 0.2}
        options.update(overrides)
        key = options.pop("api_key", self.key)
        return PlatformClient(ApiSettings(base_url=self.url, api_key=SecretStr(key), **options))


@pytest.fixture
def simulated() -> Iterator[Callable[..., Simulated]]:
    stack: list[Any] = []

    def start(scenario: str | Scenario = "small", seed: int = 0, **kwargs: Any) -> Simulated:
        sim = Simulator(scenario, seed=seed, **kwargs)
        context = serve(sim)
        server = context.__enter__()
        stack.append(context)
        company = sim.companies[0].name
        return Simulated(sim, server, company, "demo-key")

    yield start
    for context in reversed(stack):
        context.__exit__(None, None, None)


@pytest.fixture
def creditlens_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Settings]:
    def configure(s: Simulated, **extra: str) -> Settings:
        for name in list(__import__("os").environ):
            if name.startswith("CREDITLENS_") or name == "DAGSTER_HOME":
                monkeypatch.delenv(name, raising=False)
        env = {
            "CREDITLENS_BASE_URL": s.url,
            "CREDITLENS_API_KEY": s.key,
            "CREDITLENS_ACCOUNT": s.company,
            "CREDITLENS_WAREHOUSE": str(tmp_path / "warehouse.duckdb"),
            "CREDITLENS_REPORTS_DIR": str(tmp_path / "reports"),
            "CREDITLENS_LEDGER_START": s.first_day.isoformat(),
            "CREDITLENS_MAX_RETRIES": "8",
            **extra,
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return Settings.from_env()

    return configure
