"""History discovery against the simulator: a first sync reads the whole ledger without being
told where it begins, stops on evidence or on its bound, and says what it found."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from decimal import Decimal

import pytest

from pipelines.cli.sync_command import run_sync, summary_lines
from pipelines.config.settings import Settings
from pipelines.ledger.history_search import WINDOW_DAYS, Decision
from simulator import Scenario
from tests.conftest import Simulated
from tests.pipeline.helpers import landed, table, truth
from tests.pipeline.scenarios import dormant_start

Start = Callable[..., Simulated]
Env = Callable[..., Settings]

HISTORY = (
    "SELECT first_day, opening_balance, decided_by, searched_back_to, history_limit, requests "
    "FROM ledger_history"
)


def first_sync_settings(
    s: Simulated, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, **extra: str
) -> Settings:
    """The environment of a new user: no CREDITLENS_LEDGER_START, no --since."""
    creditlens_env(s, **extra)
    monkeypatch.delenv("CREDITLENS_LEDGER_START")
    return Settings.from_env()


@pytest.mark.slow
def test_history_years_before_any_configured_date_lands_whole(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The preset's company with 1,105 days of history instead of 1,360: still more than three
    # whole windows back, which is the point, and a sync costs about the same for every day it
    # lands, so the 255 days more proved nothing for a second of CPU.
    s = simulated(Scenario.named("long_history").with_company("acme", history_days=1105))
    settings = first_sync_settings(s, creditlens_env, monkeypatch)
    report = run_sync(settings, None, None)
    # Years back: more than three 366-day windows (a fixed date here would stop holding as the
    # simulator's clock, the real one, moves on).
    assert s.today - s.first_day > timedelta(days=3 * WINDOW_DAYS)
    assert landed(settings.warehouse) == truth(s)
    [(first_day, opening, decided, searched, limit, requests)] = table(settings.warehouse, HISTORY)
    assert (first_day, opening, decided) == (s.first_day, Decimal(0), Decision.EVERY_WINDOW)
    # Every window back to its bound, never stopping on a guess: 3661 days are 11 windows, then
    # at most nine halvings and the first day's page(s).
    assert searched == s.today - timedelta(days=3660)
    assert limit == 3660 and requests <= 11 + 9 + 5
    assert table(settings.warehouse, "SELECT windows_probed FROM ledger_history") == [(11,)]
    assert -(-(3660 + 1) // WINDOW_DAYS) == 11
    assert report.first == s.first_day
    [line] = [x for x in summary_lines(report) if x.startswith("history:")]
    assert s.first_day.isoformat() in line and "every window probed back to the limit" in line
    opening = table(settings.warehouse, "SELECT opening_status FROM reconciliation_runs")
    assert opening == [("ok",)]


@pytest.mark.slow
def test_a_dead_key_or_an_empty_past_stops_at_the_bound(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The company's ledger reaches further back than the bound: discovery stops there, says
    so, and the balance before the first entry it could see is a finding, never silent."""
    s = simulated("long_history")
    # A bound of 400 days (two windows) makes the point as a longer one would, with fewer days
    # to sync: a sync costs about the same for every day it lands.
    settings = first_sync_settings(s, creditlens_env, monkeypatch, CREDITLENS_HISTORY_LIMIT="400")
    run_sync(settings, None, None)
    [(first_day, opening, decided, searched, limit, requests)] = table(settings.warehouse, HISTORY)
    assert decided == Decision.EVERY_WINDOW and limit == 400
    assert searched == s.today - timedelta(days=400)
    assert first_day == searched  # the company was active on the bound's day
    # Two windows to the bound, at most nine halvings, the day's pages: bounded.
    assert requests <= 2 + 9 + 5
    assert opening != 0
    [(kind, gap)] = table(settings.warehouse, "SELECT kind, gap FROM balance_breaks")
    assert (kind, gap) == ("opening", opening)


@pytest.mark.slow
def test_a_quiet_stretch_does_not_stop_discovery_while_the_balance_says_more_came_before(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = simulated(dormant_start())
    settings = first_sync_settings(s, creditlens_env, monkeypatch)
    run_sync(settings, None, None)
    [(first_day, opening, decided, *_)] = table(settings.warehouse, HISTORY)
    assert (first_day, opening, decided) == (s.first_day, Decimal(0), Decision.EVERY_WINDOW)
    assert landed(settings.warehouse) == truth(s)


@pytest.mark.slow
def test_a_non_zero_balance_before_the_first_entry_is_flagged(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = simulated("opening_balance")
    settings = first_sync_settings(s, creditlens_env, monkeypatch)
    run_sync(settings, None, None)
    rows = table(
        settings.warehouse,
        "SELECT placement, break_start, break_end, expected_balance, observed_balance, gap "
        "FROM hidden_movements WHERE placement = 'before_first'",
    )
    [movement] = [m for m in s.sim.truth(s.company).hidden_movements if m.position == -1]
    assert rows == [
        ("before_first", None, movement.after_created_at, Decimal(0), Decimal("1234.5"),
         Decimal("1234.5"))
    ]  # fmt: skip
    # The first day opens at zero and carries the movement, so the statement ties out.
    [(opening, hidden)] = table(
        settings.warehouse,
        "SELECT opening, hidden_movements FROM daily_balance ORDER BY day LIMIT 1",
    )
    assert (opening, hidden) == (Decimal(0), Decimal("1234.5"))


def test_since_after_the_first_day_says_what_was_skipped_and_raises_nothing(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = simulated("small")
    settings = first_sync_settings(s, creditlens_env, monkeypatch)
    since = s.first_day + timedelta(days=30)
    report = run_sync(settings, since.isoformat(), None)
    lines = summary_lines(report)
    skipped = f"{s.first_day.isoformat()}..{(since - timedelta(days=1)).isoformat()} not synced"
    assert any(skipped in line for line in lines), lines
    assert any("opening: " in line and "carried in" in line for line in lines), lines
    assert table(settings.warehouse, "SELECT count(*) FROM balance_breaks") == [(0,)]
    status = table(settings.warehouse, "SELECT opening_status FROM reconciliation_runs")
    assert status == [("skipped",)]


@pytest.mark.slow
def test_the_override_and_the_partitions_start_where_the_ledger_begins(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.ledger.partitions import ledger_start_day

    s = simulated("small")
    settings = first_sync_settings(s, creditlens_env, monkeypatch)
    before = ledger_start_day(settings)
    assert before <= s.today - timedelta(days=3660)  # nothing discovered: everything in reach
    run_sync(settings, None, None)
    assert ledger_start_day(settings) == s.first_day
    monkeypatch.setenv("CREDITLENS_LEDGER_START", "2026-01-05")
    assert ledger_start_day(Settings.from_env()) == date(2026, 1, 5)
