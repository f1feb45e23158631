"""The CLI's persistent instance keeps one connection per SQLite file of its event log
(pipelines/dagster_home/storage.py), and that never stands in the way of the UI's process,
which reads and writes the same files with Dagster's stock storage meanwhile."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterInstance
from sqlalchemy import event
from sqlalchemy.pool import Pool

from tests.conftest import Disposing
from tests.dagster.support import LEDGER, Env, Start, cli_instance, home, sync_days

DAYS = 5


def test_a_run_writes_its_events_through_one_connection_and_the_ui_reads_and_writes_beside_it(
    simulated: Start,
    creditlens_env: Env,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    disposing: Disposing,
) -> None:
    s = simulated("small")
    settings = creditlens_env(s, persistent_dagster=True)
    folder = home(monkeypatch, tmp_path)
    opened: Counter[str] = Counter()

    def count(dbapi_connection: Any, _record: Any) -> None:
        [(_, _, path)] = dbapi_connection.execute("PRAGMA database_list").fetchall()
        opened[Path(path).name] += 1

    event.listen(Pool, "connect", count)
    try:
        cli = disposing(cli_instance())
        first = sync_days(settings, cli, s.first_day, DAYS)
    finally:
        event.remove(Pool, "connect", count)
    assert first.success
    # Dagster's own storage opens the run's file once per event: a hundred times for 5 days.
    # Here: its schema check, a question Dagster asks on a connection of its own, then ours.
    assert opened[f"{first.run_id}.db"] <= 3, opened
    # Its commits wait for no disk, only WAL checkpoints do (SQLite's synchronous=NORMAL: 1).
    events: Any = cli.event_log_storage
    with events._connect(first.run_id) as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1
    runs: Any = cli.run_storage
    with runs.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1

    # The UI's process, with Dagster's stock storage over the same folder, while the CLI's
    # storage (and its connections) is still open: it reads the run, and writes into the very
    # file the CLI holds a connection to; the CLI reads that, and records a second run after it.
    with DagsterInstance.from_config(str(folder)) as ui:
        run = ui.get_run_by_id(first.run_id)
        assert run is not None
        assert len(ui.get_materialized_partitions(LEDGER)) == DAYS
        ui.report_engine_event("looked at from the UI", run)
        ui.add_run_tags(first.run_id, {"seen": "in the UI"})
    messages = [r.event_log_entry.message for r in cli.get_records_for_run(first.run_id).records]
    assert "looked at from the UI" in messages
    assert cli.get_run_by_id(first.run_id).tags["seen"] == "in the UI"  # type: ignore[union-attr]
    second = sync_days(settings, cli, s.first_day, DAYS + 1)
    assert second.success
    assert len(cli.get_materialized_partitions(LEDGER)) == DAYS + 1
