"""Shared fixtures: the real simulator over loopback HTTP and real DuckDB files.

``simulated`` starts a simulator for a scenario and tears it down; ``creditlens_env`` points
every CREDITLENS_* variable at it and at a fresh warehouse under tmp_path, the way a user's
shell would.

Its runs are recorded in an ephemeral Dagster instance (CREDITLENS_DAGSTER_INSTANCE=ephemeral):
a persistent one costs a second or more per sync, and only the tests about the instance need
it. Those ask for ``persistent_dagster=True``, which leaves the variable unset: the product's
default, a persistent instance beside the warehouse (or in DAGSTER_HOME).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pytest
from hypothesis import settings as hypothesis_settings
from pydantic import SecretStr

from benchmarks.harness.machine import use_bytecode_cache
from pipelines.api.client import PlatformClient
from pipelines.api.options import ApiSettings
from pipelines.config.settings import Settings
from pipelines.runtime.startup import imports_without_gc
from simulator import Scenario, ServerHandle, Simulator, serve
from tests import SUITE_VARIABLES

if TYPE_CHECKING:  # Dagster is imported by the tests that sync, not by every test
    from pipelines.cli.sync_report import SyncReport

# Hypothesis profiles: "ci" runs every property test with the examples it declares (Hypothesis's
# 100 where it declares none); "dev", the inner loop's, at most DEV_EXAMPLES each, so a property
# still runs on every change without holding it up. HYPOTHESIS_PROFILE chooses (.ci/run sets
# "ci"); unset, a run that leaves out the slow tests is the inner loop and takes "dev".
DEV_EXAMPLES = 5
hypothesis_settings.register_profile("ci")
hypothesis_settings.register_profile("dev", max_examples=DEV_EXAMPLES)


# Collection imports the product and every test module, Dagster's tree included: loaded with
# the collector paused and frozen after, as a `creditlens` command's imports are
# (pipelines/runtime/startup.py), so the tests' own collections never walk them again.
_collecting = ExitStack()


def pytest_configure(config: pytest.Config) -> None:
    _collecting.enter_context(imports_without_gc())
    # Where PYTHONDONTWRITEBYTECODE is set (as on the machine image this suite grew on), every
    # interpreter the suite starts, each worker and each `python -m pipelines.cli` child, compiled
    # the repository's 300-odd modules from source: 0.2 CPU-s a child, and each worker rewrote
    # every test module's asserts again. Python and pytest now keep that bytecode in the tree's
    # (ignored) __pycache__ folders and use what pip compiled, as the benchmarks' children do.
    use_bytecode_cache(warm=False)
    inner_loop = "not slow" in (config.option.markexpr or "")
    default = "dev" if inner_loop else "ci"
    hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or default)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (pyproject.toml) starts one worker more than the machine has cores: a sixth of
    the suite's test time is spent waiting (on sockets, child processes, Chromium, a simulated
    rate limit), and a third worker fills it. Measured on 2 cores: the whole suite 6m17s with 2
    workers, 5m52s with 3; the inner loop 87 s and 78 s. PYTEST_XDIST_AUTO_NUM_WORKERS still
    decides where it is set (xdist's own rule then applies)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    _collecting.close()  # xdist's controller collects nothing and reaches this too


def pytest_unconfigure(config: pytest.Config) -> None:
    _collecting.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    _heavy_files_first(items)
    _cap_examples_in_the_inner_loop(items)


def _heavy_files_first(items: list[pytest.Item]) -> None:
    """The files holding a slow test run first, each file's tests kept together (a module's
    shared sync is built once). The two workers then split the long tests early and the short
    ones fill the end: in collection order, a 25-second test taken last by one worker kept the
    other idle to the finish."""
    heavy = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in heavy)  # stable: the order within a file holds


def _cap_examples_in_the_inner_loop(items: list[pytest.Item]) -> None:
    """Under "dev", caps the examples a test declares in its own ``@settings`` too (a profile
    only fills in what a test leaves unsaid). ``@given`` keeps a test's settings in the attribute
    read here, as ``hypothesis.seed`` sets it; if Hypothesis renames it, the cap just stops."""
    if hypothesis_settings.default.max_examples > DEV_EXAMPLES:
        return
    for item in items:
        test = getattr(item, "obj", None)
        declared = getattr(test, "_hypothesis_internal_use_settings", None)
        if declared is not None and declared.max_examples > DEV_EXAMPLES:
            test._hypothesis_internal_use_settings = hypothesis_settings(  # type: ignore[union-attr]
                declared, max_examples=DEV_EXAMPLES
            )


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


@contextmanager
def serving(
    scenario: str | Scenario = "small", seed: int = 0, **kwargs: Any
) -> Iterator[Simulated]:
    """A simulator of ``scenario`` served on loopback for the block (``simulated`` is per test;
    this is for a module-scoped fixture)."""
    sim = Simulator(scenario, seed=seed, **kwargs)
    with serve(sim) as server:
        yield Simulated(sim, server, sim.companies[0].name, "demo-key")


@pytest.fixture
def simulated() -> Iterator[Callable[..., Simulated]]:
    stack: list[Any] = []

    def start(scenario: str | Scenario = "small", seed: int = 0, **kwargs: Any) -> Simulated:
        context = serving(scenario, seed, **kwargs)
        started = context.__enter__()
        stack.append(context)
        return started

    yield start
    # Each server takes uvicorn's ticks (0.2-0.3 s) to stop. Nothing after the test reads them,
    # so they stop in the background while the next test starts, each on its own port.
    for context in reversed(stack):
        threading.Thread(
            target=context.__exit__, args=(None, None, None), name="simulator-stop", daemon=True
        ).start()


def creditlens_variables(
    s: Simulated, folder: Path, *, persistent_dagster: bool = False, **extra: str
) -> dict[str, str]:
    """The CREDITLENS_* variables of a user of ``s`` whose warehouse and reports are in
    ``folder``; see the module's docstring for ``persistent_dagster``."""
    return {
        "CREDITLENS_BASE_URL": s.url,
        "CREDITLENS_API_KEY": s.key,
        "CREDITLENS_ACCOUNT": s.company,
        "CREDITLENS_WAREHOUSE": str(folder / "warehouse.duckdb"),
        "CREDITLENS_REPORTS_DIR": str(folder / "reports"),
        "CREDITLENS_LEDGER_START": s.first_day.isoformat(),
        "CREDITLENS_MAX_RETRIES": "8",
        **SUITE_VARIABLES,
        **({} if persistent_dagster else {"CREDITLENS_DAGSTER_INSTANCE": "ephemeral"}),
        **extra,
    }


def synced_once(s: Simulated, folder: Path) -> Settings:
    """A whole sync of ``s`` into ``folder``, for a module-scoped fixture whose tests only read
    the warehouse; it must succeed."""
    settings, report = sync_into(s, folder)
    assert not report.failures(), report.failures()
    return settings


def sync_into(
    s: Simulated,
    folder: Path,
    since: str | None = None,
    until: str | None = None,
    *,
    persistent_dagster: bool = False,
    **extra: str,
) -> tuple[Settings, SyncReport]:
    """One sync of ``s`` into ``folder`` with its window, instance and variables chosen, and its
    report: a module-scoped starting point that a test copies instead of syncing again. The
    variables (the key is read from the environment when the API is called) are set for the
    sync alone, so none is left for the tests."""
    from pipelines.cli.sync_command import run_sync  # Dagster: only for the tests that sync

    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in list(os.environ):
            if name.startswith("CREDITLENS_") or name == "DAGSTER_HOME":
                monkeypatch.delenv(name)
        variables = creditlens_variables(s, folder, persistent_dagster=persistent_dagster, **extra)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        settings = Settings.from_env()
        report = run_sync(settings, since, until)
    return settings, report


@pytest.fixture
def creditlens_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Settings]:
    def configure(s: Simulated, *, persistent_dagster: bool = False, **extra: str) -> Settings:
        for name in list(os.environ):
            if name.startswith("CREDITLENS_") or name == "DAGSTER_HOME":
                monkeypatch.delenv(name, raising=False)
        env = creditlens_variables(s, tmp_path, persistent_dagster=persistent_dagster, **extra)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return Settings.from_env()

    return configure


class _Disposable(Protocol):
    def dispose(self) -> None: ...


D = TypeVar("D", bound=_Disposable)


class Disposing(Protocol):
    def __call__(self, thing: D, /) -> D: ...


@pytest.fixture
def disposing() -> Iterator[Disposing]:
    """Hands back what it is given (a Dagster instance, an event log storage) and disposes of it
    when the test ends. An in-memory one holds SQLite connections open while it lives, and
    Dagster's contexts keep it alive after its runs: left to the garbage collector, a
    connection is closed in whichever thread frees it, and SQLAlchemy logs SQLite's refusal
    with a traceback into a later test's output (tests/dagster/test_instance_lifetime.py)."""
    given: list[_Disposable] = []

    def keep(thing: D) -> D:
        given.append(thing)
        return thing

    yield keep
    for thing in reversed(given):
        thing.dispose()
