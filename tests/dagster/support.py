"""Running creditlens's definitions against a real Dagster instance in a temporary DAGSTER_HOME.

The instance is the one the CLI builds (pipelines/dagster_home/instance.py), configured by the
project's own pipelines/dagster_home/dagster.yaml, so these tests see what `dagster dev` over the
same folder shows.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterEventType, DagsterInstance, EventLogEntry, EventLogRecord

from pipelines.cli.runner import RunOutcome, instance, run_job
from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from tests.conftest import Simulated

Start = Callable[..., Simulated]
Env = Callable[..., Settings]
LEDGER = AssetKey("ledger_entries")


def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A fresh, empty DAGSTER_HOME, as an engineer would export before `dagster dev`."""
    folder = tmp_path / "dagster-home"
    folder.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(folder))
    return folder


def cli_instance() -> DagsterInstance:
    """The instance `creditlens sync` records its runs in, for the current environment."""
    return instance()


def sync_days(
    settings: Settings, dagster_instance: DagsterInstance, first: date, days: int
) -> RunOutcome:
    """A ledger run over ``days`` days from ``first``, as `creditlens sync` runs it."""
    return run_job(
        build_definitions(settings),
        "ledger_sync",
        dagster_instance,
        first=first,
        last=first + timedelta(days=days - 1),
    )


def materializations(
    dagster_instance: DagsterInstance, key: AssetKey = LEDGER
) -> list[EventLogRecord]:
    return list(dagster_instance.fetch_materializations(key, limit=10_000).records)


def run_log(
    dagster_instance: DagsterInstance, run_id: str, kind: DagsterEventType | None = None
) -> list[EventLogEntry]:
    records = dagster_instance.get_records_for_run(run_id, of_type=kind, limit=10_000).records
    return [r.event_log_entry for r in records]
