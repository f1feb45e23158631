"""What a CLI run leaves in Dagster's event log: per-day planned events only where they are kept.

By default the CLI records its runs in a persistent instance beside the warehouse (or
DAGSTER_HOME), whose UI shows each day: one planned event per day, so a failed run marks its
days failed, and the materializations stored as one batch. An ephemeral instance
(CREDITLENS_DAGSTER_INSTANCE=ephemeral) dies with the process, so the CLI asks Dagster for one
planned event per asset (with the run's partition subset) instead. Either way every day still
gets its materialization, and the switches are set for the run only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterInstance

from pipelines.cli.runner import (
    EPHEMERAL_EVENT_SETTINGS,
    PERSISTENT_EVENT_SETTINGS,
    instance,
    run_job,
)
from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from tests.conftest import Disposing, Simulated

Start = Callable[..., Simulated]
Env = Callable[..., Settings]
DAYS = 20


def _ledger_events(dagster_instance: DagsterInstance, run_id: str) -> tuple[int, int]:
    def count(kind: DagsterEventType) -> int:
        records = dagster_instance.get_records_for_run(run_id, of_type=kind, limit=10_000)
        return sum(
            1
            for r in records.records
            if r.event_log_entry.dagster_event is not None
            and r.event_log_entry.dagster_event.asset_key is not None
            and r.event_log_entry.dagster_event.asset_key.to_user_string() == "ledger_entries"
        )

    return (
        count(DagsterEventType.ASSET_MATERIALIZATION_PLANNED),
        count(DagsterEventType.ASSET_MATERIALIZATION),
    )


def _run_ledger(
    settings: Settings, s: Simulated, disposing: Disposing
) -> tuple[DagsterInstance, str]:
    dagster_instance = disposing(instance())
    first = s.first_day
    outcome = run_job(
        build_definitions(settings),
        "ledger_sync",
        dagster_instance,
        first=first,
        last=first + timedelta(days=DAYS - 1),
    )
    return dagster_instance, outcome.run_id


def _clear_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in {*EPHEMERAL_EVENT_SETTINGS, *PERSISTENT_EVENT_SETTINGS}:
        monkeypatch.delenv(name, raising=False)


def test_an_ephemeral_run_plans_once_and_still_materializes_every_day(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, disposing: Disposing
) -> None:
    _clear_switches(monkeypatch)
    s = simulated("small")
    dagster_instance, run_id = _run_ledger(
        creditlens_env(s, CREDITLENS_DAGSTER_INSTANCE="ephemeral"), s, disposing
    )
    assert dagster_instance.is_ephemeral
    assert _ledger_events(dagster_instance, run_id) == (1, DAYS)
    # Set for the run only: a later persistent instance in the same process keeps the defaults.
    assert not set(EPHEMERAL_EVENT_SETTINGS) & set(os.environ)


@pytest.mark.slow
def test_by_default_the_run_is_kept_beside_the_warehouse_with_per_day_events(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, disposing: Disposing
) -> None:
    _clear_switches(monkeypatch)
    s = simulated("small")
    settings = creditlens_env(s, persistent_dagster=True)
    dagster_instance, run_id = _run_ledger(settings, s, disposing)
    assert not dagster_instance.is_ephemeral
    assert dagster_instance.root_directory == str(settings.warehouse.parent / ".creditlens-dagster")
    assert _ledger_events(dagster_instance, run_id) == (DAYS, DAYS)
    assert not set(PERSISTENT_EVENT_SETTINGS) & set(os.environ)


@pytest.mark.slow
def test_dagster_home_wins_and_keeps_dagsters_per_day_events(
    simulated: Start,
    creditlens_env: Env,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    disposing: Disposing,
) -> None:
    _clear_switches(monkeypatch)
    s = simulated("small")
    settings = creditlens_env(s, persistent_dagster=True)
    home = tmp_path / "dagster-home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    dagster_instance, run_id = _run_ledger(settings, s, disposing)
    assert not dagster_instance.is_ephemeral
    assert dagster_instance.root_directory == str(home)
    assert (home / "dagster.yaml").is_file()  # creditlens's, since the folder had none
    assert _ledger_events(dagster_instance, run_id) == (DAYS, DAYS)
