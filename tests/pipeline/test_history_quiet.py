"""Companies that went silent and came back: a first sync lands their whole ledger whatever the
length of the silence or the balance it was spent at, says the silence is a quiet period (not
the beginning), and reconciles without a false finding; a warehouse the older rule cut short
heals itself on its next sync."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from itertools import pairwise

import pytest

from pipelines.cli.sync_command import run_sync, summary_lines
from pipelines.config.settings import Settings
from pipelines.ledger.history_asset import record_history
from pipelines.ledger.history_search import WINDOW_DAYS, Decision, History
from simulator import Scenario
from tests.conftest import Simulated
from tests.pipeline.helpers import landed, table, truth
from tests.pipeline.scenarios import (
    quiet_at_zero_1y,
    quiet_at_zero_2y,
    quiet_at_zero_3y,
    quiet_not_at_zero_2y,
)

Start = Callable[..., Simulated]
Env = Callable[..., Settings]

HISTORY = (
    "SELECT first_day, opening_balance, decided_by, windows_probed, entries_counted, "
    "quiet_periods, replaces_first_day FROM ledger_history ORDER BY discovered_at"
)
FINDINGS = "SELECT count(*) FROM hidden_movements"
OPENING = "SELECT opening_status FROM reconciliation_runs ORDER BY checked_at DESC LIMIT 1"


def first_sync_settings(
    s: Simulated, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, **extra: str
) -> Settings:
    """The environment of a new user: no CREDITLENS_LEDGER_START, no --since."""
    creditlens_env(s, **extra)
    monkeypatch.delenv("CREDITLENS_LEDGER_START")
    return Settings.from_env()


def silence(s: Simulated) -> tuple[date, date]:
    """The truth's silence: the days strictly between the last entry before the long gap and
    the first entry after it."""
    entries = s.sim.truth(s.company).entries
    before, after = max(
        pairwise(entries),
        key=lambda pair: pair[1]["createdAt"] - pair[0]["createdAt"],
    )
    return before["createdAt"].date() + timedelta(days=1), after["createdAt"].date() - timedelta(
        days=1
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scenario", "whole_windows_empty"),
    [
        (quiet_at_zero_2y, 1),  # the shapes the older rule stopped at ...
        (quiet_at_zero_3y, 2),  # (several empty windows in a row: one quiet period)
        (quiet_at_zero_1y, 0),  # ... and the neighbours it already read whole
        (quiet_not_at_zero_2y, 1),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_a_first_sync_lands_the_whole_ledger_of_a_company_that_went_silent(
    scenario: Callable[[], Scenario],
    whole_windows_empty: int,
    simulated: Start,
    creditlens_env: Env,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = simulated(scenario())
    settings = first_sync_settings(s, creditlens_env, monkeypatch)
    report = run_sync(settings, None, None)
    assert not report.failures()
    assert landed(settings.warehouse) == truth(s)
    [(first_day, opening, decided, windows, counted, quiet, replaces)] = table(
        settings.warehouse, HISTORY
    )
    assert (first_day, opening, decided) == (s.first_day, Decimal(0), Decision.EVERY_WINDOW)
    assert windows == 11 and counted == len(truth(s)) and replaces is None
    quiet_first, quiet_last = silence(s)
    lines = summary_lines(report)
    if whole_windows_empty:
        # Reported as a quiet period inside the real silence, made of whole windows.
        first, last = (date.fromisoformat(d) for d in quiet.split(".."))
        assert quiet_first <= first and last <= quiet_last
        assert ((last - first).days + 1) == whole_windows_empty * WINDOW_DAYS
        said = f"quiet period: no entries from {first.isoformat()} to {last.isoformat()}"
        assert any(said in line for line in lines), lines
    else:
        assert quiet == ""
    # Reconciled without a false finding: no hidden movement, the ledger opens at zero.
    assert table(settings.warehouse, FINDINGS) == [(0,)]
    assert table(settings.warehouse, OPENING) == [("ok",)]


@pytest.mark.slow
def test_a_warehouse_cut_short_by_the_older_rule_is_probed_again_once_and_heals(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = simulated(quiet_at_zero_2y())
    # What the older rule left: only the entries after the silence landed (a limit that ends
    # inside the silence reaches the same ones) ...
    settings = first_sync_settings(s, creditlens_env, monkeypatch, CREDITLENS_HISTORY_LIMIT="500")
    run_sync(settings, None, None)
    restart = silence(s)[1] + timedelta(days=1)
    missed = [e for e in truth(s) if e[0] < restart.isoformat()]
    assert missed and landed(settings.warehouse) == [e for e in truth(s) if e not in missed]
    # ... and its record, written through the production recording path: "opens at zero".
    older = History(
        account=s.company,
        first_day=restart,
        first_entry_at=datetime(restart.year, restart.month, restart.day, tzinfo=UTC),
        opening_balance=Decimal(0),
        decided_by=Decision.OPENS_AT_ZERO,
        searched_back_to=restart - timedelta(days=WINDOW_DAYS),
        limit_days=3660,
        requests=14,
    )
    record_history(settings.open_warehouse(), older, "older-rule")

    monkeypatch.delenv("CREDITLENS_HISTORY_LIMIT")
    settings = Settings.from_env()
    report = run_sync(settings, None, None)
    assert landed(settings.warehouse) == truth(s)  # what was missed is landed
    *_, (first_day, _, decided, _, _, _, replaces) = table(settings.warehouse, HISTORY)
    assert (first_day, decided, replaces) == (s.first_day, Decision.EVERY_WINDOW, restart)
    [line] = [x for x in summary_lines(report) if x.startswith("history: first entry")]
    assert f"probed again: an older discovery had stopped at {restart.isoformat()}" in line
    assert table(settings.warehouse, FINDINGS) == [(0,)]
    assert table(settings.warehouse, OPENING) == [("ok",)]

    # Once: the next sync finds a current record and does not probe again.
    rows = len(table(settings.warehouse, HISTORY))
    again = run_sync(settings, None, None)
    assert again.history is None and len(table(settings.warehouse, HISTORY)) == rows


@pytest.mark.slow
def test_since_after_a_quiet_period_is_skipped_not_a_finding(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The opening rule with a silence at a non-zero balance: days left out on purpose carry
    their balance in and are said, never flagged, and the silence changes nothing of that."""
    s = simulated(quiet_not_at_zero_2y())
    settings = first_sync_settings(s, creditlens_env, monkeypatch)
    since = silence(s)[1] + timedelta(days=1)
    report = run_sync(settings, since.isoformat(), None)
    lines = summary_lines(report)
    skipped = f"{s.first_day.isoformat()}..{(since - timedelta(days=1)).isoformat()} not synced"
    assert any(skipped in line for line in lines), lines
    assert any("quiet period: no entries from" in line for line in lines), lines
    assert table(settings.warehouse, FINDINGS) == [(0,)]
    assert table(settings.warehouse, OPENING) == [("skipped",)]
