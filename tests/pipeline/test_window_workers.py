"""Windows read side by side in worker processes land exactly what one process would.

Workers are real spawned processes talking to the real simulator over loopback: the same rows,
the same counters, a failure in a worker reaches the sync as the same typed, one-line error, and
a killed sync takes its workers down with it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from pipelines.api.client import PlatformClient
from pipelines.api.errors import Unauthorized
from pipelines.api.options import ApiSettings
from pipelines.ledger.sync import LedgerSyncResult, sync_ledger
from pipelines.warehouse.writer import Warehouse
from simulator import Fault, Scenario
from tests.conftest import Simulated
from tests.pipeline.helpers import landed, truth
from tests.reliability.forks import fork_server

Start = Callable[..., Simulated]
LONG = Scenario.named("small").with_company("acme", history_days=100, entries_per_day=20)


def _sync(s: Simulated, tmp: Path, processes: int, **over: object) -> LedgerSyncResult:
    settings = ApiSettings(
        base_url=s.url,
        api_key=s.key,
        max_window_days=30,
        processes=processes,
        worker_min_entries=0,
        **over,
    )
    with PlatformClient(settings) as client:
        return sync_ledger(
            client,
            Warehouse(tmp / "warehouse.duckdb", lock_timeout_s=60),
            account=s.company,
            first=s.first_day,
            last=s.today,
            run_id=f"run-{processes}",
            staging_root=tmp / "staging",
        )


@pytest.mark.slow
def test_workers_land_what_one_process_lands(simulated: Start, tmp_path: Path) -> None:
    s = simulated(LONG)
    one = _sync(s, tmp_path / "one", processes=1)
    three = _sync(s, tmp_path / "three", processes=3)
    assert landed(tmp_path / "three" / "warehouse.duckdb", s.company) == truth(s)
    assert landed(tmp_path / "one" / "warehouse.duckdb", s.company) == truth(s)
    assert three.windows == one.windows >= 4
    for name in ("pages", "fetched", "landed", "quarantined"):
        assert getattr(three, name) == getattr(one, name), name
    # Each long window after the first is sized by one request before a worker is chosen.
    assert three.requests == one.requests + 2  # days 31-60 and 61-90; 91-100 is short
    assert three.fetched == three.landed + three.quarantined
    assert not any((tmp_path / "three" / "staging").iterdir())


def test_a_failure_in_a_worker_is_the_same_one_line_error(simulated: Start, tmp_path: Path) -> None:
    s = simulated(LONG)
    second = str(s.first_day + timedelta(days=30))
    s.sim.faults.respond(
        {"type": "about:blank", "title": "Unauthorized", "status": 401, "detail": "key revoked"},
        status=401,
        content_type="application/problem+json",
        match=lambda query: query.get("startDate", "").startswith(second),
    )
    with pytest.raises(Unauthorized) as failure:
        _sync(s, tmp_path, processes=2)
    assert failure.value.status == 401 and failure.value.detail == "key revoked"
    assert "\n" not in str(failure.value) and s.key not in str(failure.value)
    assert not any((tmp_path / "staging").iterdir())


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_sync_takes_its_workers_down(
    simulated: Start, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    s = simulated(Scenario.named("small").with_company("acme", history_days=420))
    second = str(s.first_day + timedelta(days=366))
    on_second_page_one = lambda q: q.get("startDate") == second and q.get("pageNumber") == "1"  # noqa: E731
    # The sync sizes the second window (answered at once), then its worker reads page 1, which
    # the server holds for 8 s: the worker is surely busy, not idle, when the sync dies.
    s.sim.faults.script(
        Fault("timeout", delay=0.0, match=on_second_page_one),
        Fault("timeout", delay=8.0, match=on_second_page_one),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREDITLENS_", "DAGSTER_"))}
    env |= {
        "CREDITLENS_BASE_URL": s.url,
        "CREDITLENS_API_KEY": s.key,
        "CREDITLENS_ACCOUNT": s.company,
        "CREDITLENS_WAREHOUSE": str(tmp_path / "warehouse.duckdb"),
        "CREDITLENS_LEDGER_START": s.first_day.isoformat(),
        "CREDITLENS_PROCESSES": "2",
        "CREDITLENS_WORKER_MIN_ENTRIES": "0",
        # What is proven is the workers' death, not where Dagster keeps its runs: an ephemeral
        # instance spares the child a persistent one's second or more.
        "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
    }
    # A process of its own to kill, forked from a warm interpreter (tests/reliability/forks.py):
    # the workers it spawns are fresh interpreters either way, and die with it or not.
    sync = fork_server(tmp_path_factory).start("sync", env=env)
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while time.monotonic() < deadline and not workers:
            workers = [
                p
                for p in _children(sync.pid)
                if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")
            ]
            time.sleep(0.05)
        assert workers, "the sync never started a window worker"
        while time.monotonic() < deadline and len(s.sim.faults.fired) < 2:
            time.sleep(0.05)  # until the worker waits on its slow page
        assert len(s.sim.faults.fired) == 2, s.sim.faults.fired
        sync.kill()
        assert sync.wait(timeout=30) == -signal.SIGKILL, sync.output[-2000:]
        deadline = time.monotonic() + 3  # without PR_SET_PDEATHSIG, it would live 8 s more
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.05)
        assert not any(_alive(p) for p in workers), "a worker outlived the killed sync"
    finally:
        sync.kill()  # unless it already ended
        sync.wait(timeout=30)


def test_landing_groups_never_split_a_day() -> None:
    from datetime import date

    from pipelines.ledger.staging import StagedFile, landing_groups

    def f(name: str, rows: int, first: int, last: int) -> StagedFile:
        return StagedFile(Path(name), rows, date(2025, 1, first), date(2025, 1, last))

    # newest-first pages: day 5 straddles two batches, day 2..3 a third; out of order on purpose
    files = [f("c", 50, 1, 2), f("a", 60, 5, 9), f("b", 60, 3, 5), f("d", 10, 12, 12)]
    groups = landing_groups(files, max_rows=100)
    assert groups == [[Path("c")], [Path("b"), Path("a")], [Path("d")]]
    assert landing_groups(files, max_rows=10**9) == [[Path("c"), Path("b"), Path("a"), Path("d")]]
