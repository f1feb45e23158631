"""A sync killed anywhere (SIGKILL: no cleanup, as a power cut) loses nothing once rerun, and the
analyst copy is a complete database after every kill.

Two kinds of kill: at the named failpoints of pipelines/failpoints.py, on a first sync with no
warehouse yet; and at random moments of a sync of a larger ledger, chosen by seeded timers.
Every sync here covers the whole ledger and lands it in one transaction, so any state a kill
leaves must hold either none of the ledger or all of it, exactly.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipelines.settings import Settings
from simulator import Scenario, Simulator, serve
from tests.conftest import Simulated
from tests.pipeline.helpers import cli, landed, truth
from tests.reliability.support import (
    TRANSACTIONS,
    RequestSpy,
    analyst_copy,
    ledger_rows_if_openable,
)

Start = Callable[..., Simulated]
Env = Callable[..., Settings]

FAILPOINTS = ("fetch", "transaction", "publish")
# Seeds of the timer kills (docs/reliability.md quotes them); each draws one kill moment.
KILL_SEEDS = (11, 12, 13)
# The larger ledger of the timer kills: 120 days at ~100 entries a day, ~120 pages.
LARGER = Scenario.named("small").with_company("acme", history_days=120, entries_per_day=100)


def _assert_none_or_all(path: Path, expected: list[tuple], account: str) -> int | None:
    """After a kill: no database yet, or a complete one holding none of the ledger or all of it."""
    rows = ledger_rows_if_openable(path)  # opens read-only: raises if the file is not whole
    assert rows in (None, 0, len(expected)), f"{path.name}: {rows} of {len(expected)} rows"
    if rows:
        assert landed(path, account) == expected
    return rows


def test_killed_at_each_failpoint_of_a_first_sync_then_rerun(
    simulated: Start, creditlens_env: Env
) -> None:
    s = simulated("small")
    settings = creditlens_env(s)
    expected = truth(s)
    analyst = analyst_copy(settings)
    after: dict[str, tuple[int | None, int | None]] = {}
    for point in FAILPOINTS:  # each on the state the previous kill left
        killed = cli("sync", env={"CREDITLENS_FAILPOINT": point})
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
        after[point] = (
            _assert_none_or_all(settings.warehouse, expected, s.company),
            _assert_none_or_all(analyst, expected, s.company),
        )
    # Nothing is committed before the landing transaction's COMMIT; after it, everything is.
    assert after["fetch"][0] in (None, 0) and after["transaction"][0] in (None, 0)
    assert after["publish"][0] == len(expected)
    again = cli("sync")
    assert again.returncode == 0, again.stderr[-2000:]
    assert landed(settings.warehouse, s.company) == expected
    assert landed(analyst, s.company) == expected


@dataclass
class Larger:
    s: Simulated
    spy: RequestSpy
    env: dict[str, str]
    clean: Path  # the warehouse of a clean, unkilled sync
    span_s: float  # from its first ledger request to its exit


def _start_sync(env: dict[str, str], warehouse: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "sync"],
        env={**env, "CREDITLENS_WAREHOUSE": str(warehouse)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def larger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Larger]:
    sim = Simulator(LARGER, seed=3)
    company = sim.companies[0].name
    first = sim.truth(company).entries[0]["createdAtText"][:10]
    with serve(sim) as server:
        spy = RequestSpy(sim)
        env = {
            **{
                k: v
                for k, v in os.environ.items()
                if not k.startswith("CREDITLENS_") and k != "DAGSTER_HOME"
            },
            "CREDITLENS_BASE_URL": server.url,
            "CREDITLENS_API_KEY": "demo-key",
            "CREDITLENS_ACCOUNT": company,
            "CREDITLENS_LEDGER_START": min(first, sim.clock.now.date().isoformat()),
        }
        clean = tmp_path_factory.mktemp("clean") / "warehouse.duckdb"
        seen = spy.counts[TRANSACTIONS]
        process = _start_sync(env, clean)
        assert spy.wait_for(TRANSACTIONS, seen + 1, timeout=120)
        started = time.monotonic()
        _, err = process.communicate(timeout=300)
        span = time.monotonic() - started
        assert process.returncode == 0, err[-2000:]
        yield Larger(Simulated(sim, server, company, "demo-key"), spy, env, clean, span)


def test_killed_at_random_moments_then_rerun(larger: Larger, tmp_path: Path) -> None:
    """Each seed kills a sync of the whole ledger at a moment drawn uniformly between its first
    ledger request and the end of a clean sync; the kills pile up on one warehouse."""
    s = larger.s
    expected = truth(s)
    assert landed(larger.clean, s.company) == expected
    warehouse = tmp_path / "warehouse.duckdb"
    analyst = warehouse.with_name("warehouse.analyst.duckdb")
    outcomes = []
    for seed in KILL_SEEDS:
        delay = random.Random(seed).uniform(0, larger.span_s)
        seen = larger.spy.counts[TRANSACTIONS]
        process = _start_sync(larger.env, warehouse)
        try:
            assert larger.spy.wait_for(TRANSACTIONS, seen + 1, timeout=120)
            time.sleep(delay)
            process.send_signal(signal.SIGKILL)
        finally:
            process.communicate(timeout=120)
        outcomes.append(
            (
                seed,
                round(delay, 2),
                process.returncode,
                _assert_none_or_all(warehouse, expected, s.company),
                _assert_none_or_all(analyst, expected, s.company),
            )
        )
    print("KILLS", larger.span_s, outcomes)
    again = _start_sync(larger.env, warehouse)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err[-2000:]
    assert landed(warehouse, s.company) == landed(larger.clean, s.company)
    assert landed(analyst, s.company) == expected
