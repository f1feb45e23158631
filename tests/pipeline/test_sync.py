"""The ledger and the snapshots in DuckDB, exactly once, through the Dagster definitions."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipelines.cli.sync_command import run_sync
from pipelines.cli.sync_report import SyncReport
from pipelines.config.settings import Settings
from simulator import Scenario
from tests.conftest import Simulated, serving
from tests.pipeline.helpers import (
    cli_in_process,
    copy_folder,
    landed,
    sync_into,
    table,
    truth,
)
from tests.reliability.forks import fork_server

Start = Callable[..., Simulated]
Env = Callable[..., Settings]
Synced = tuple[Simulated, Path, SyncReport]

# One simulator of "small" for the tests that only read it (no fault, no clock change: those
# start their own), and the syncs several tests start from, made once and copied by a test that
# writes. The simulator is seeded and its clock frozen, so it is the one each test had before.


@pytest.fixture(scope="module")
def small() -> Iterator[Simulated]:
    with serving("small") as s:
        yield s


@pytest.fixture(scope="module")
def whole(small: Simulated, tmp_path_factory: pytest.TempPathFactory) -> Synced:
    """A whole first sync of ``small``."""
    folder = tmp_path_factory.mktemp("whole")
    _, report = sync_into(small, folder)
    assert not report.failures(), report.failures()
    return small, folder, report


@pytest.fixture(scope="module")
def rerun(whole: Synced, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of ``whole`` synced again with nothing new: where the rerun test and the
    snapshots test both start (each from a copy of its own)."""
    s, folder, _ = whole
    again = tmp_path_factory.mktemp("rerun")
    copy_folder(folder, again)
    _, report = sync_into(s, again)
    assert not report.failures(), report.failures()
    return again


@pytest.fixture(scope="module")
def first_forty_days(small: Simulated, tmp_path_factory: pytest.TempPathFactory) -> Synced:
    """A first sync of ``small``'s first 40 days, recorded in the product's default (persistent)
    Dagster instance beside the warehouse, which the copy takes along."""
    folder = tmp_path_factory.mktemp("first-forty-days")
    until = (small.first_day + timedelta(days=40)).isoformat()
    _, report = sync_into(small, folder, None, until, persistent_dagster=True)
    assert not report.failures(), report.failures()
    return small, folder, report


@pytest.mark.slow
def test_sync_lands_exactly_the_simulators_ledger(whole: Synced) -> None:
    s, folder, report = whole
    warehouse = folder / "warehouse.duckdb"
    rows = landed(warehouse, s.company)
    assert rows == truth(s)  # row by row, amounts exact (Decimal == DECIMAL)
    meta = report.ledger.materializations["ledger_entries"]
    assert meta["entries_fetched"] == meta["entries_landed"] + meta["entries_quarantined"]
    assert meta["entries_landed"] == len(rows)
    accounts = table(warehouse, "SELECT DISTINCT account FROM ledger_entries")
    assert accounts == [(s.company,)]
    ids = table(warehouse, "SELECT count(*), count(DISTINCT entry_id) FROM ledger_entries")
    assert ids[0][0] == ids[0][1]


@pytest.mark.slow
def test_identical_entries_are_both_kept(whole: Synced) -> None:
    s, folder, _ = whole
    pairs = table(
        folder / "warehouse.duckdb",
        "SELECT fingerprint, count(*) FROM ledger_entries GROUP BY 1 HAVING count(*) > 1",
    )
    assert pairs, "the small scenario has genuinely identical entries"
    truth_rows = truth(s)
    assert len(truth_rows) - len(set(truth_rows)) == sum(n - 1 for _, n in pairs)


@pytest.mark.slow
def test_rerun_and_overlapping_backfills_change_nothing(
    whole: Synced, rerun: Path, creditlens_env: Env, tmp_path: Path
) -> None:
    s, folder, _ = whole
    snapshot = "SELECT entry_id, created_at, amount, balance_after FROM ledger_entries ORDER BY 1"
    before = table(folder / "warehouse.duckdb", snapshot)  # the first, whole sync
    copy_folder(rerun, tmp_path)  # then a rerun (resumes from last day minus lookback)
    settings = creditlens_env(s)
    mid = s.first_day + timedelta(days=30)
    run_sync(settings, s.first_day.isoformat(), mid.isoformat())
    run_sync(
        settings, (mid - timedelta(days=10)).isoformat(), (mid + timedelta(days=20)).isoformat()
    )
    assert table(settings.warehouse, snapshot) == before


@pytest.mark.slow
def test_several_windows_and_the_sign_of_a_366_day_boundary(
    simulated: Start, creditlens_env: Env
) -> None:
    scenario = Scenario.named("small").with_company("acme", history_days=733, entries_per_day=3)
    s = simulated(scenario)
    settings = creditlens_env(s)
    report = run_sync(settings, None, None)
    # 732 settled days in exactly two windows of 366 (windows a day shorter would make three),
    # then today on its own. (A sync costs about the same per day: no longer history is needed.)
    assert report.ledger.materializations["ledger_entries"]["windows"] == 3
    assert landed(settings.warehouse, s.company) == truth(s)


@pytest.mark.slow
def test_bad_entries_are_quarantined_with_reason_and_raw_json(
    simulated: Start, creditlens_env: Env
) -> None:
    s = simulated("small")
    settings = creditlens_env(s, CREDITLENS_LEDGER_START=s.today.isoformat())
    day = s.today.isoformat()
    good = {
        "createdAt": f"{day}T00:00:01.000Z",
        "type": "Usage",
        "amount": -1.5,
        "description": "ok",
        "hasDescription": True,
        "channel": "Phone",
        "agentId": "a",
        "campaignId": "c",
        "balanceAfter": 10,
    }
    bad_amount = {**good, "amount": "NaN"}
    outside = {**good, "createdAt": "1999-01-01T00:00:00Z"}
    body = {"data": [good, bad_amount, outside], "total": 3, "pageNumber": 1, "pageSize": 100}
    s.sim.faults.respond(body, match=lambda q: q.get("pageNumber") == "1")
    s.sim.faults.respond(
        {"data": [], "total": 3, "pageNumber": 2, "pageSize": 100},
        match=lambda q: q.get("pageNumber") == "2",
    )
    report = run_sync(settings, day, day)
    meta = report.ledger.materializations["ledger_entries"]
    assert (meta["entries_fetched"], meta["entries_landed"], meta["entries_quarantined"]) == (
        3,
        1,
        2,
    )
    rows = table(
        settings.warehouse, "SELECT reason, raw_json FROM quarantine ORDER BY page_position"
    )
    assert "amount 'NaN'" in rows[0][0] and '"amount": "NaN"' in rows[0][1]
    assert "outside the requested window" in rows[1][0]
    # A rerun replaces the day's quarantine rows instead of doubling them.
    run_sync(settings, day, day)
    assert table(settings.warehouse, "SELECT count(*) FROM quarantine") == [(2,)]
    runs = table(
        settings.warehouse,
        "SELECT entries_fetched, entries_landed, entries_quarantined FROM sync_runs",
    )
    assert all(fetched == ok + bad for fetched, ok, bad in runs)


@pytest.mark.slow
def test_snapshots_are_stored_once_until_they_change(
    simulated: Start, creditlens_env: Env, rerun: Path, tmp_path: Path
) -> None:
    # Its own simulator, since its clock moves; the same seed and frozen clock as the shared
    # one, so the shared first and second syncs are this simulator's first two syncs too.
    s = simulated("small")
    copy_folder(rerun, tmp_path)
    settings = creditlens_env(s)
    counts = {
        t: table(settings.warehouse, f"SELECT count(DISTINCT content_hash) FROM {t}")[0][0]
        for t in (
            "subscription_snapshots",
            "consumption_snapshots",
            "breakdown_snapshots",
            "campaigns",
        )
    }
    assert counts == dict.fromkeys(counts, 1)
    # New usage a second later: the summary and the breakdown change. (Six hours of the clock
    # brought none when the suite ran late in the UTC evening: the night is quiet, and its
    # next day is past the sync's default --until, real today.)
    s.sim.clock.advance(timedelta(seconds=1))
    s.sim.add_entries_now(s.company, 3)
    run_sync(settings, None, None)
    assert (
        table(settings.warehouse, "SELECT count(DISTINCT content_hash) FROM consumption_snapshots")[
            0
        ][0]
        == 2
    )
    balance = table(
        settings.warehouse,
        "SELECT balance FROM consumption_snapshots ORDER BY fetched_at DESC LIMIT 1",
    )[0][0]
    assert balance == s.sim.truth(s.company).balance
    assert landed(settings.warehouse, s.company) == truth(s)


def test_an_unexpected_snapshot_shape_is_kept_raw(simulated: Start, creditlens_env: Env) -> None:
    s = simulated("small")
    settings = creditlens_env(s)
    s.sim.faults.respond({"surprise": [1, 2]}, path="/Subscription")
    report = run_sync(settings, s.today.isoformat(), None)
    assert report.snapshots.materializations["subscription_snapshots"]["shape_ok"] is False
    assert table(settings.warehouse, "SELECT shape_ok, raw_json FROM subscription_snapshots") == [
        (False, '{"surprise": [1, 2]}')
    ]


@pytest.mark.slow
def test_rejected_key_is_one_clear_line(small: Simulated, creditlens_env: Env) -> None:
    creditlens_env(small)
    # The command's own output and exit code, in-process: the killed syncs below run the real
    # entry point as a process.
    result = cli_in_process("sync", env={"CREDITLENS_API_KEY": "wrong-key-0000"})
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("creditlens: error: the API key was rejected (401 Unauthorized)")
    )
    assert (
        "Traceback" not in result.stderr and "wrong-key-0000" not in result.stderr + result.stdout
    )


@pytest.mark.slow
@pytest.mark.parametrize("point", ["fetch", "transaction", "publish"])
def test_killed_anywhere_then_rerun_equals_a_clean_run(
    first_forty_days: Synced,
    creditlens_env: Env,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    point: str,
) -> None:
    s, folder, _ = first_forty_days
    # The product's default instance: a kill leaves its run "started" there, and the rerun must
    # get past it. Only the kill needs a process of its own (forked from a warm interpreter, not
    # a fresh one's seconds of imports each: tests/reliability/forks.py); the syncs around it run
    # in-process, the first one (shared, copied) included.
    copy_folder(folder, tmp_path)
    settings = creditlens_env(s, persistent_dagster=True)
    env = {**os.environ, "CREDITLENS_FAILPOINT": point}
    forks = fork_server(tmp_path_factory)
    killed = forks.start("sync", "--since", s.first_day.isoformat(), env=env)
    assert killed.wait(timeout=300) == -signal.SIGKILL, killed.output[-2000:]
    analyst = settings.warehouse.with_name("warehouse.analyst.duckdb")
    duckdb.connect(str(analyst), read_only=True).close()  # always a complete database
    again = run_sync(settings, s.first_day.isoformat(), None)
    assert not again.failures()
    assert landed(settings.warehouse, s.company) == truth(s)
    assert landed(analyst, s.company) == truth(s)


@pytest.mark.slow
def test_a_reader_of_the_analyst_copy_never_blocks_nor_sees_half(
    first_forty_days: Synced, creditlens_env: Env, tmp_path: Path
) -> None:
    s, folder, _ = first_forty_days
    copy_folder(folder, tmp_path)  # a first sync of part of the ledger, the reader's snapshot
    settings = creditlens_env(s)
    analyst = settings.warehouse.with_name("warehouse.analyst.duckdb")
    reader = duckdb.connect(str(analyst), read_only=True)
    try:
        before = reader.execute("SELECT count(*), sum(amount) FROM ledger_entries").fetchone()
        run_sync(settings, s.first_day.isoformat(), None)  # a full run while the reader is open
        during = reader.execute("SELECT count(*), sum(amount) FROM ledger_entries").fetchone()
        assert during == before  # the reader keeps its consistent snapshot
    finally:
        reader.close()
    after = table(analyst, "SELECT count(*) FROM ledger_entries")[0][0]
    assert after == len(truth(s))
    assert isinstance(before[1], Decimal)


@contextmanager
def dagster_logging_put_back() -> Iterator[None]:
    """Dagster's commands configure logging for a process of their own (their loggers' handlers
    and level, structlog, warnings to logging): what they set is put back after, so the tests
    that follow in this process see the logging they saw before."""
    import structlog

    names = ("dagster", "dagit", "dagster-webserver")
    loggers = [logging.getLogger(name) for name in names]
    saved = [(lg, list(lg.handlers), lg.level, lg.propagate, lg.disabled) for lg in loggers]
    structlog_configured = structlog.is_configured()
    warnings_captured = logging._warnings_showwarning is not None  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for lg, handlers, level, propagate, disabled in saved:
            lg.handlers[:] = handlers
            lg.setLevel(level)
            lg.propagate, lg.disabled = propagate, disabled
        if not structlog_configured:
            structlog.reset_defaults()
        logging.captureWarnings(warnings_captured)


@pytest.mark.slow
def test_dagster_definitions_validate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dagster's own `dagster definitions validate` of workspace.yaml, the file `dagster dev`
    loads, through Dagster's command in this process: the command loads the code location
    in-process by default, so a fresh interpreter added only its seconds of imports, and the
    definitions' import in a fresh interpreter is proven where it is the point
    (tests/dagster/test_asset_metadata.py)."""
    from click.testing import CliRunner
    from dagster._cli import cli as dagster_cli

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # a temporary instance, as in CI
    # The command sets this for the rest of its process: set here, so the test's end undoes it.
    monkeypatch.setenv("DAGSTER_IS_DEFS_VALIDATION_CLI", "1")
    with dagster_logging_put_back():
        result = CliRunner().invoke(
            dagster_cli, ["definitions", "validate", "-w", "workspace.yaml"], catch_exceptions=False
        )
    assert result.exit_code == 0, result.output[-2000:]
    assert "All code locations passed validation" in result.output
