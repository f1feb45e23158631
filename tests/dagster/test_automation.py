"""The refresh follows the ledger's data: requested by its materialization, never by a failure.

`daily_refresh` used to fire 30 minutes after the ledger sync's schedule, whether the sync had
finished, failed or was still running.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    Definitions,
    RunRequest,
    SkipReason,
    build_schedule_context,
    evaluate_automation_conditions,
)

from pipelines.cli.runner import QUIET
from pipelines.definitions import build_definitions
from pipelines.orchestration.runs import partition_range_tags
from pipelines.reports.schedules import daily_refresh
from pipelines.snapshots.registry import TABLES
from tests.conftest import Disposing, Simulated
from tests.dagster.support import Env, Start, cli_instance, home, sync_days

REFRESH = {*TABLES, "balance_breaks", "breakdown_mismatches", "daily_balance", "ledger_enriched"}


def _ui_sync(defs: Definitions, dagster_instance: DagsterInstance, s: Simulated) -> bool:
    """A ledger run as the UI or its schedule launches it (not the CLI's)."""
    last = s.first_day + timedelta(days=2)
    result = defs.resolve_job_def("ledger_sync").execute_in_process(
        instance=dagster_instance,
        run_config=QUIET,
        raise_on_error=False,
        tags=partition_range_tags(s.first_day, last),
    )
    return result.success


def _requested(result: object) -> set[str]:
    return {
        key.to_user_string()
        for key in (AssetKey(name) for name in (*REFRESH, "reports", "ledger_entries"))
        if result.get_requested_partitions(key)  # type: ignore[attr-defined]
    }


def _refresh(dagster_instance: DagsterInstance) -> RunRequest | SkipReason:
    return daily_refresh(build_schedule_context(instance=dagster_instance))  # type: ignore[return-value]


@pytest.mark.slow
def test_a_ledger_sync_requests_the_refresh_and_a_failed_one_does_not(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = simulated("small")
    settings = creditlens_env(s, persistent_dagster=True, CREDITLENS_HISTORY_LIMIT="0")
    home(monkeypatch, tmp_path)
    dagster_instance = cli_instance()
    defs = build_definitions(settings)
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance)
    assert tick.total_requested == 0  # nothing on a first tick: nothing happened
    assert isinstance(_refresh(dagster_instance), SkipReason)

    # A failed sync (the key was revoked) materializes nothing and requests nothing.
    monkeypatch.setenv("CREDITLENS_API_KEY", "revoked-key")
    assert not _ui_sync(defs, dagster_instance, s)
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=tick.cursor)
    assert _requested(tick) == set()
    skip = _refresh(dagster_instance)
    assert isinstance(skip, SkipReason) and "ended FAILURE" in (skip.skip_message or "")

    # A sync that lands requests the snapshots, the reconciliation and the reports, once.
    monkeypatch.setenv("CREDITLENS_API_KEY", s.key)
    assert _ui_sync(defs, dagster_instance, s)
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=tick.cursor)
    assert _requested(tick) == {*REFRESH, "reports"}
    assert isinstance(_refresh(dagster_instance), RunRequest)  # with the automation off
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=tick.cursor)
    assert _requested(tick) == set()  # handled: not requested again

    # A CLI sync refreshes by itself: its ledger run requests nothing.
    sync_days(settings, dagster_instance, s.first_day, 1)
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=tick.cursor)
    assert _requested(tick) == set()


@pytest.mark.slow
def test_findings_do_not_hold_the_reports_back(
    simulated: Start, creditlens_env: Env, tmp_path: Path, disposing: Disposing
) -> None:
    """A reconciliation that finds something is a successful run with red checks: the reports
    build in it and are requested again after the next ledger sync, showing the findings."""
    s = simulated("hidden_movements")
    settings = creditlens_env(s, CREDITLENS_HISTORY_LIMIT="0")
    dagster_instance = disposing(DagsterInstance.ephemeral())
    defs = build_definitions(settings)
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance)
    assert _ui_sync(defs, dagster_instance, s)
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=tick.cursor)
    assert _requested(tick) == {*REFRESH, "reports"}
    refresh = defs.resolve_job_def("daily_refresh").execute_in_process(
        instance=dagster_instance, run_config=QUIET, raise_on_error=False
    )
    assert refresh.success
    checks = {
        e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data
        for e in refresh.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    hidden = checks["no_hidden_movements"]
    assert not hidden.passed and not hidden.blocking and hidden.metadata["breaks"].value
    assert refresh.asset_materializations_for_node("reports")
    index = (tmp_path / "reports" / "index.html").read_text()
    assert "Open hidden movements" in index

    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=tick.cursor)
    assert _requested(tick) == set()  # refreshed: nothing until the ledger syncs again
    assert _ui_sync(defs, dagster_instance, s)  # the next sync: the findings are still open
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=tick.cursor)
    assert _requested(tick) == {*REFRESH, "reports"}  # a failed ERROR check holds nothing back


ACCOUNTS = """
[defaults]
base_url = "{url}"
api_key_env = "AGENCY_KEY"
history_limit = 0

[[accounts]]
name = "acme"

[[accounts]]
name = "globex"
"""


def test_with_an_accounts_file_a_ledger_sync_requests_the_reconciliation_of_all(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One reconciliation for every account (docs/scale-out.md, "One event per step, not per
    company"): the automation requests its four assets and the reports after a ledger sync, and
    the daily refresh selects them."""
    s = simulated("small")
    config = tmp_path / "agency.toml"
    config.write_text(ACCOUNTS.format(url=s.url))
    creditlens_env(s, persistent_dagster=True, CREDITLENS_CONFIG=str(config), AGENCY_KEY=s.key)
    home(monkeypatch, tmp_path)
    dagster_instance = cli_instance()
    defs = build_definitions()
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance)
    assert _ui_sync(defs, dagster_instance, s)
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=tick.cursor)
    outputs = {
        AssetKey(output)
        for output in ("balance_breaks", "breakdown_mismatches", "daily_balance", "ledger_enriched")
    }
    requested = {k for k in outputs | {AssetKey("reports")} if tick.get_requested_partitions(k)}
    assert requested == outputs | {AssetKey("reports")}
    assert not tick.get_requested_partitions(AssetKey(["acme", "balance_breaks"]))  # none now
    refresh = defs.resolve_job_def("daily_refresh").asset_layer.selected_asset_keys
    assert outputs <= set(refresh)
    assert isinstance(_refresh(dagster_instance), RunRequest)  # nothing reconciled it yet
