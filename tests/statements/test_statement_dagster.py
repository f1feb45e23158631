"""The month close in Dagster: the statements asset materializes one month partition, the close
job records a materialization of each month it closed, and the sensor follows reconciliations
but not the CLI's (the CLI closes after its own sync)."""

from __future__ import annotations

from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRun, materialize

from pipelines.definitions import build_definitions
from pipelines.orchestration.automation import CLI_RUN_TAG
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.statements.definitions import JOB, close_request
from tests.pipeline.helpers import table
from tests.statements.conftest import Copy
from tests.statements.test_close import covered, previous_month


def _defs(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    from pipelines.config.settings import Settings

    return build_definitions(Settings.from_env())


def test_the_asset_materializes_one_month_partition(
    copy: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, settings = copy()
    month = previous_month(covered(settings.warehouse))
    defs = _defs(env, monkeypatch)
    asset = defs.resolve_assets_def("statement_closes")
    assert asset.partitions_def is not None
    assert f"{month:%Y-%m}" in asset.partitions_def.get_partition_keys()
    node = defs.resolve_asset_graph().get(AssetKey("statement_closes"))
    assert node.pools == {WAREHOUSE_POOL}
    with DagsterInstance.ephemeral() as instance:
        result = materialize([asset], partition_key=f"{month:%Y-%m}", instance=instance)
        assert result.success
        (event,) = result.asset_materializations_for_node("statement_closes")
        assert event.partition == f"{month:%Y-%m}"
        assert event.metadata["closed"].value == f"acme {month:%Y-%m}"
    assert table(settings.warehouse, "SELECT DISTINCT month FROM statement_closes") == [(month,)]


def test_the_close_job_materializes_each_month_it_closed(
    copy: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, settings = copy()
    defs = _defs(env, monkeypatch)
    job = defs.resolve_job_def(JOB)
    with DagsterInstance.ephemeral() as instance:
        result = job.execute_in_process(instance=instance)
        assert result.success
        events = result.asset_materializations_for_node("check_statements")
        months = table(settings.warehouse, "SELECT month FROM statement_closes ORDER BY month")
        assert [e.partition for e in events] == [f"{m:%Y-%m}" for (m,) in months]
        assert job.execute_in_process(instance=instance).success  # again: nothing new
    assert table(settings.warehouse, "SELECT count(*) FROM statement_closes") == [(len(months),)]
    assert defs.resolve_schedule_def("statement_close_daily").cron_schedule == "30 2 * * *"


def test_the_sensor_follows_reconciliations_but_not_the_cli() -> None:
    reconciled = DagsterRun(job_name="reconciliation_run", run_id="r1")
    assert close_request(reconciled).run_key == "statements-after-r1"
    by_cli = DagsterRun(job_name="reconciliation_run", run_id="r2", tags={CLI_RUN_TAG: "1"})
    assert "CLI" in close_request(by_cli).skip_message
    refresh = DagsterRun(
        job_name="__ASSET_JOB", run_id="r3", asset_selection={AssetKey("balance_breaks")}
    )
    assert close_request(refresh).run_key == "statements-after-r3"
    assert (
        "did not reconcile"
        in close_request(DagsterRun(job_name="ledger_sync", run_id="r4")).skip_message
    )
    assert close_request(DagsterRun(job_name=JOB, run_id="r5")).skip_message == "a close check"
