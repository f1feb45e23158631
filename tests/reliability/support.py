"""What the reliability tests share: fast retry settings, a request spy on the simulator, and
checks that a warehouse or an analyst copy is whole."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config.settings import Settings
from pipelines.warehouse.schema import all_tables
from pipelines.warehouse.writer import Warehouse
from simulator import Simulator
from tests.conftest import Simulated
from tests.pipeline.helpers import cli_in_process, truth

TRANSACTIONS = "/Consumption/transactions"

# Retries in milliseconds, not seconds: a test survives hundreds of faults in a few seconds. The
# budget (10 retries) is what a fault rate of 30% needs to never be exhausted in practice:
# 0.3 ** 11 per request. Each "timeout" fault costs the client its whole timeout (a sync of
# `small` meets ~35 of them at 30%), so the timeout is short: a loopback answer takes
# milliseconds, and one slower than this on a loaded machine is only retried, like the faults.
FAST_RETRIES = {
    "CREDITLENS_TIMEOUT": "0.2",
    "CREDITLENS_BACKOFF_BASE_S": "0.01",
    "CREDITLENS_BACKOFF_MAX_S": "0.05",
    "CREDITLENS_MAX_RETRIES": "10",
}
# A "timeout" fault holds its answer this long, far beyond CREDITLENS_TIMEOUT above; the simulator
# gives up as soon as the client hangs up, so it costs the client's timeout, not this.
FAULT_DELAY_S = 5.0


def empty_warehouse_at(path: Path) -> None:
    """An empty warehouse at ``path``, every migration applied, as a first sync creates it (a
    copy of the process's empty warehouse: pipelines/warehouse/empty.py), without the analyst
    copy a sync would publish beside it. For the tests whose claim is about what the API sends
    (faults, hostile answers), where a sync creating the file first proves nothing more; the
    first sync's own creation of a warehouse is tested elsewhere."""
    with Warehouse(path, lock_timeout_s=60).write():
        pass


def analyst_copy(settings: Settings) -> Path:
    return settings.analyst_copy or settings.warehouse.with_name(
        f"{settings.warehouse.stem}.analyst.duckdb"
    )


def truth_between(s: Simulated, first: date, last: date) -> list[tuple]:
    """The simulator's ledger restricted to UTC days first..last, as `landed` reads a warehouse."""
    return [row for row in truth(s) if first.isoformat() <= row[0][:10] <= last.isoformat()]


def missing_rows(expected: list[tuple], got: list[tuple]) -> tuple[Counter, Counter]:
    """(rows expected but not got, rows got but not expected), as multisets."""
    want, have = Counter(expected), Counter(got)
    return want - have, have - want


def ledger_rows_if_openable(path: Path) -> int | None:
    """Rows of ledger_entries in a database opened read-only, None when there is no file.

    Raises when the file exists but is not a complete database: that is the failure we look for.
    """
    if not path.exists():
        return None
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = set(_table_names(con))
        if "ledger_entries" not in tables:
            return 0
        return int(con.execute("SELECT count(*) FROM ledger_entries").fetchone()[0])
    finally:
        con.close()


def every_table(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table, sorted, to compare a database before and after a failed run."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        names = _table_names(con)
        return {
            name: sorted(con.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr)
            for name in sorted(names)
        }
    finally:
        con.close()


def _table_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The warehouse's tables; in the analyst copy, which holds none, the views that stand for
    them over its Parquet files."""
    names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    if names:
        return names
    tables = {t.name for t in all_tables() if t.kind == "table"}
    views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    return [r[0] for r in views if r[0] in tables]


# Lines a failing sync may print besides its error: the plain progress lines of the ledger.
PROGRESS_PREFIX = "ledger: "
# What a stack trace looks like, from Python or from Dagster's event log.
TRACE_MARKERS = ("Traceback (most recent call last)", "Stack Trace:", '  File "')


def assert_one_clear_error_line(
    result: subprocess.CompletedProcess, *names: str, alone: bool = True
) -> str:
    """A failed command: a positive exit code (not a signal), no stack trace, and its last stderr
    line `creditlens: error: ...` naming `names`; with `alone`, nothing else on stderr but
    progress lines. Returns that line."""
    output = result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode > 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
    assert lines, "no error message on stderr"
    last = lines[-1]
    assert last.startswith("creditlens: error: "), result.stderr[-2000:]
    for name in names:
        assert name in last, f"{name!r} not named in: {last}"
    assert "Traceback (most recent call last)" not in output, result.stderr[-2000:]
    if alone:
        noise = [line for line in lines[:-1] if not line.startswith(PROGRESS_PREFIX)]
        assert not noise, "more than one line on stderr:\n" + "\n".join(noise[:20])
        assert not any(marker in output for marker in TRACE_MARKERS), result.stderr[-2000:]
    return last


class RequestSpy:
    """Counts the simulator's requests per path as they arrive, and lets a test wait for the n-th.

    Installed as a `respond` hook whose matcher never matches: it sees every request (before
    rate faults are drawn) and changes none.
    """

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self.counts: Counter[str] = Counter()
        self.latest: dict[str, float] = {}  # monotonic time of the latest request per path
        self.install()

    def install(self) -> None:
        for path in (
            TRANSACTIONS,
            "/Consumption",
            "/Consumption/breakdown",
            "/Subscription",
            "/Campaign",
        ):
            self._sim.faults.respond(None, path=path, match=self._matcher(path))

    def _matcher(self, path: str):  # type: ignore[no-untyped-def]
        def seen(query: Mapping[str, str]) -> bool:
            with self._arrived:
                self.counts[path] += 1
                self.latest[path] = time.monotonic()
                self._arrived.notify_all()
            return False

        return seen

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())

    def wait_for(self, path: str, n: int, timeout: float) -> bool:
        with self._arrived:
            return self._arrived.wait_for(lambda: self.counts[path] >= n, timeout=timeout)


def creditlens(
    *args: str,
    env: Mapping[str, str] | None = None,
    unset: tuple[str, ...] = (),
    timeout: float = 300,
) -> subprocess.CompletedProcess:
    """`python -m pipelines.cli ARGS` in a child process with the test's environment, changed by
    `env` and without the variables in `unset` (tests.pipeline.helpers.cli cannot remove one)."""
    environ = {k: v for k, v in os.environ.items() if k not in unset}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli_logged(*args: str, **kwargs: Any) -> subprocess.CompletedProcess:
    """``cli_in_process`` with the product's log lines in its stderr, where a child process
    prints them: pytest's capture handlers on the root logger would make ``main()``'s
    ``logging.basicConfig`` do nothing, so they are set aside for the call (and the warnings a
    sync logs, that a test reads, would be missing from its output)."""
    root = logging.getLogger()
    saved = list(root.handlers)
    root.handlers.clear()
    try:
        return cli_in_process(*args, **kwargs)
    finally:
        root.handlers[:] = saved
