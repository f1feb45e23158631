"""The CLI and the UI share one history: a `creditlens sync` shows in `dagster dev`.

A sync used to run in an instance that died with the process: a fresh `dagster dev` over the
same warehouse then showed no partition materialized and the snapshots never materialized, and
an engineer would backfill again. With DAGSTER_HOME set, every sync printed Dagster's "No
dagster.yaml" warning.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterInstance, DagsterRunStatus
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from pipelines.dagster_home.home import DAGSTER_YAML, HOME_NAME
from pipelines.dagster_home.instance import HOST_TAG, PID_TAG, cli_tags, fail_orphaned_runs
from pipelines.definitions import build_definitions
from pipelines.orchestration.automation import CLI_RUN_TAG
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.snapshots.registry import TABLES
from tests.dagster.support import Env, Start, cli_instance, home
from tests.pipeline.helpers import cli

DAYS = 5


def _dagster_dev_view(folder: Path) -> DagsterInstance:
    """The instance as `dagster dev` opens it: Dagster's stock storage, from the folder."""
    return DagsterInstance.from_config(str(folder))


@pytest.mark.slow
def test_a_cli_sync_is_in_the_instance_beside_the_warehouse(
    simulated: Start, creditlens_env: Env
) -> None:
    s = simulated("small")
    settings = creditlens_env(s, persistent_dagster=True, CREDITLENS_HISTORY_LIMIT="0")
    last = s.first_day + timedelta(days=DAYS - 1)
    done = cli("sync", "--since", s.first_day.isoformat(), "--until", last.isoformat())
    assert done.returncode == 0, done.stderr[-2000:]
    assert "warning" not in done.stderr.lower(), done.stderr  # none of Dagster's, none of ours

    folder = settings.warehouse.parent / HOME_NAME
    assert (folder / "dagster.yaml").read_text() == DAGSTER_YAML.read_text()
    ui = _dagster_dev_view(folder)
    days = ui.get_materialized_partitions(AssetKey("ledger_entries"))
    assert days == {(s.first_day + timedelta(days=n)).isoformat() for n in range(DAYS)}
    for table in (*TABLES, "balance_breaks", "daily_balance"):
        assert ui.get_latest_materialization_event(AssetKey(table)) is not None, table
    runs = {r.job_name: r for r in ui.get_runs()}
    # Two runs a sync: the ledger and the snapshots in one, then the reconciliation.
    assert set(runs) == {"ledger_and_snapshot_sync", "reconciliation_run"}
    assert all(r.tags[CLI_RUN_TAG] == "true" for r in runs.values())
    assert runs["ledger_and_snapshot_sync"].status == DagsterRunStatus.SUCCESS
    # Five days against today's balance: a movement after the last entry, a finding, not a
    # failure: the run succeeds with its check failed (the CLI lists it and exits 0).
    assert runs["reconciliation_run"].status == DagsterRunStatus.SUCCESS
    evaluation = ui.event_log_storage.get_latest_asset_check_execution_by_key(
        [AssetCheckKey(AssetKey("balance_breaks"), "no_hidden_movements")]
    )[AssetCheckKey(AssetKey("balance_breaks"), "no_hidden_movements")]
    assert evaluation.status == AssetCheckExecutionRecordStatus.FAILED
    assert "hidden movement" in done.stdout


@pytest.mark.slow
def test_dagster_home_gets_the_projects_configuration_and_no_warning(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = simulated("small")
    creditlens_env(s, persistent_dagster=True, CREDITLENS_HISTORY_LIMIT="0")
    folder = home(monkeypatch, tmp_path)
    day = s.first_day.isoformat()
    done = cli("sync", "--since", day, "--until", day)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dagster.yaml" not in done.stderr and "warning" not in done.stderr.lower()
    assert (folder / "dagster.yaml").read_text() == DAGSTER_YAML.read_text()
    assert _dagster_dev_view(folder).get_materialized_partitions(AssetKey("ledger_entries")) == {
        day
    }
    # A folder's own configuration is never replaced.
    (folder / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    assert cli_instance().get_concurrency_config().pool_config.default_pool_limit is None
    assert (folder / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"


def test_a_run_whose_process_is_gone_is_marked_failed(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Left "started", it would hold every queued run of the UI on the warehouse's pool."""
    settings = creditlens_env(simulated("small"), persistent_dagster=True)
    home(monkeypatch, tmp_path)
    dagster_instance = cli_instance()
    job = build_definitions(settings).resolve_job_def("snapshot_sync")
    gone = {**cli_tags(), PID_TAG: "4194304"}  # above any pid_max: never a live process
    orphan = dagster_instance.create_run_for_job(job, status=DagsterRunStatus.STARTED, tags=gone)
    live = dagster_instance.create_run_for_job(
        job, status=DagsterRunStatus.STARTED, tags={**gone, PID_TAG: str(os.getppid())}
    )
    elsewhere = dagster_instance.create_run_for_job(
        job, status=DagsterRunStatus.STARTED, tags={**gone, HOST_TAG: "another-host"}
    )
    assert fail_orphaned_runs(dagster_instance) == [orphan.run_id]
    status = {r.run_id: r.status for r in dagster_instance.get_runs()}
    assert status[orphan.run_id] == DagsterRunStatus.FAILURE
    assert status[live.run_id] == status[elsewhere.run_id] == DagsterRunStatus.STARTED


@pytest.mark.slow
def test_the_ui_gets_the_folder_the_cli_uses_ready(tmp_path: Path) -> None:
    """`export DAGSTER_HOME="$(python -m pipelines.dagster_home)"` before `dagster dev`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREDITLENS_", "DAGSTER_"))}
    env["CREDITLENS_WAREHOUSE"] = str(tmp_path / "data" / "warehouse.duckdb")
    done = subprocess.run(
        [sys.executable, "-m", "pipelines.dagster_home"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    folder = tmp_path / "data" / HOME_NAME
    assert done.stdout == f"{folder}\n"
    limits = _dagster_dev_view(folder).event_log_storage.get_pool_limits()
    assert [(p.name, p.limit) for p in limits] == [(WAREHOUSE_POOL, 1)]
