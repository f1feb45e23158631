"""A Dagster run outside `creditlens sync` (the UI's, a schedule's) publishes the analyst copy
itself, once, when it ends: its steps only ask for it (pipelines/resources/warehouse.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.cli.runner import instance, run_job
from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from pipelines.warehouse import publish
from pipelines.warehouse.writer import Warehouse
from tests.conftest import Simulated
from tests.pipeline.test_analyst_copy import outcome

Start = Callable[..., Simulated]
Env = Callable[..., Settings]


def count(path: Path, sql: str) -> int:
    with duckdb.connect(str(path), read_only=True) as con:
        return int(con.execute(sql).fetchall()[0][0])


@pytest.mark.slow
def test_a_dagster_run_publishes_the_analyst_copy_once_at_its_end(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = simulated("small")
    settings = creditlens_env(s)
    run_sync(settings, None, None)
    published: list[Path] = []
    real = publish.publish_now

    def counted(*args: Any) -> publish.Published:
        published.append(args[1])
        return real(*args)

    monkeypatch.setattr(publish, "publish_now", counted)  # a spy: the publish still happens
    outcome = run_job(build_definitions(settings), "reconciliation_run", instance())
    assert outcome.success
    copy = settings.open_warehouse().analyst_copy
    assert published == [copy]
    runs = "SELECT count(*) FROM reconciliation_runs"
    assert count(copy, runs) == count(settings.warehouse, runs) == 2  # the run's rows are in it


def test_a_run_inside_a_sync_leaves_the_publish_to_the_sync(tmp_path: Path) -> None:
    """`creditlens sync` runs its Dagster runs in its own process: the run's end (the resource's
    teardown) is not the sync's, which publishes once after its last run."""
    warehouse = Warehouse(tmp_path / "w.duckdb", lock_timeout_s=5)
    warehouse.ensure()
    inode = warehouse.analyst_copy.stat().st_ino
    with publish.publishing_once():  # the CLI's sync
        publish.begin_publishing_once()  # a run's resource, set up
        warehouse.append("sync_outcomes", [outcome("acme")])
        warehouse.publish_analyst_copy()  # a step asks
        publish.end_publishing_once()  # the run ends: not the sync
        assert warehouse.analyst_copy.stat().st_ino == inode
    assert warehouse.analyst_copy.stat().st_ino != inode
