"""Each account's checks keep their last result in the UI after a run that did not cover it.

Dagster shows a check's result only while it targets its asset's latest materialization. With
one ``balance_breaks`` for every account, `creditlens sync --account acme` re-materialized it
and every check of the other companies read "Not Evaluated"; so did a failed account's after a
full run. Each account's reconciliation is now its own assets (``globex/balance_breaks``), so
what one run does not reconcile keeps its materialization and its checks' results. Proved here
with Dagster's own rule (``targets_latest_materialization``, what the UI asks) in a persistent
instance, as `dagster dev` over the same folder would show it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterInstance, SkipReason, build_schedule_context
from dagster._core.loader import LoadingContextForTest

from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from pipelines.reconciliation.summary import BREAKDOWN, HIDDEN_MOVEMENTS, SUMMARY
from pipelines.reports.schedules import daily_refresh
from tests.conftest import Simulated
from tests.dagster.support import cli_instance, home

Start = Callable[..., Simulated]
ACCOUNTS = """
[[accounts]]
name = "acme"
base_url = "{acme}"
api_key_env = "ACME_KEY"
history_limit = 0

[[accounts]]
name = "globex"
base_url = "{globex}"
api_key_env = "GLOBEX_KEY"
history_limit = 0
"""
OUTPUTS = ("balance_breaks", "breakdown_mismatches", "daily_balance", "ledger_enriched")


def _agency(
    simulated: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Simulated, Simulated]:
    acme, globex = simulated("small"), simulated("small", seed=1)
    config = tmp_path / "agency.toml"
    config.write_text(ACCOUNTS.format(acme=acme.url, globex=globex.url))
    for name in list(os.environ):
        if name.startswith("CREDITLENS_") or name == "DAGSTER_HOME":
            monkeypatch.delenv(name, raising=False)
    env = {
        "CREDITLENS_CONFIG": str(config),
        "CREDITLENS_WAREHOUSE": str(tmp_path / "warehouse.duckdb"),
        "CREDITLENS_REPORTS_DIR": str(tmp_path / "reports"),
        "CREDITLENS_LEDGER_START": min(acme.first_day, globex.first_day).isoformat(),
        "CREDITLENS_MAX_RETRIES": "8",
        "ACME_KEY": acme.key,
        "GLOBEX_KEY": globex.key,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    home(monkeypatch, tmp_path)
    return acme, globex


def _checks(account: str) -> list[AssetCheckKey]:
    asset = AssetKey([account, "balance_breaks"])
    bases = (HIDDEN_MOVEMENTS, BREAKDOWN, SUMMARY)
    return [AssetCheckKey(asset, f"{base}__{account}") for base in bases]


def _shown(dagster_instance: DagsterInstance, account: str) -> dict[str, str]:
    """What the UI shows of each check of ``account``: the run of its latest evaluation when
    that evaluation targets the asset's latest materialization, else "Not Evaluated"."""
    context = LoadingContextForTest(dagster_instance)
    latest = dagster_instance.event_log_storage.get_latest_asset_check_execution_by_key(
        _checks(account)
    )
    shown = {}
    for key in _checks(account):
        record = latest.get(key)
        targets = record is not None and _run(record.targets_latest_materialization(context))
        shown[key.name] = record.run_id if targets and record else "Not Evaluated"
    return shown


def _run(awaitable: object) -> bool:
    return bool(asyncio.run(awaitable))  # type: ignore[arg-type]


def _latest_run(dagster_instance: DagsterInstance, key: AssetKey) -> str:
    event = dagster_instance.get_latest_materialization_event(key)
    assert event is not None, f"{key.to_user_string()} was never materialized"
    return event.run_id


@pytest.mark.slow
def test_a_sync_of_one_account_leaves_the_others_checks_evaluated(
    simulated: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _agency(simulated, tmp_path, monkeypatch)
    full = run_sync(Settings.from_env(), None, None)
    assert not full.failures(), full.failures()
    dagster_instance = cli_instance()
    before = _shown(dagster_instance, "globex")
    assert set(before.values()) == {full.reconciliation.run_id}, before
    skip = daily_refresh(build_schedule_context(instance=dagster_instance))
    assert isinstance(skip, SkipReason) and "already reconciled" in (skip.skip_message or "")

    only = run_sync(Settings.from_env(), None, None, accounts=["acme"])
    assert not only.failures() and only.reconciliation.run_id != full.reconciliation.run_id
    assert _shown(dagster_instance, "globex") == before  # still evaluated, by the full run
    latest = dagster_instance.get_latest_materialization_event(
        AssetKey(["globex", "balance_breaks"])
    )
    executions = dagster_instance.event_log_storage.get_latest_asset_check_execution_by_key(
        _checks("globex")
    )
    for execution in executions.values():  # each targets globex's own latest materialization
        target = execution.evaluation.target_materialization_data if execution.evaluation else None
        assert target is not None and latest is not None
        assert (target.run_id, target.timestamp) == (latest.run_id, latest.timestamp)
    assert set(_shown(dagster_instance, "acme").values()) == {only.reconciliation.run_id}
    for output in OUTPUTS:
        globex, acme = AssetKey(["globex", output]), AssetKey(["acme", output])
        assert _latest_run(dagster_instance, globex) == full.reconciliation.run_id
        assert _latest_run(dagster_instance, acme) == only.reconciliation.run_id
    # The sync's own summary reads each account's own reconciliation.
    assert only.reconciliation_summary("acme") is not None

    # A full run in which globex fails (its key revoked) leaves globex's results shown too.
    monkeypatch.setenv("GLOBEX_KEY", "globex-key-revoked")
    failed = run_sync(Settings.from_env(), None, None)
    assert [f.account for f in failed.failures()] == ["globex"]
    assert _shown(dagster_instance, "globex") == before
    assert set(_shown(dagster_instance, "acme").values()) == {failed.reconciliation.run_id}


def test_without_an_accounts_file_the_names_stay_plain(
    simulated: Start, creditlens_env: Callable[..., Settings]
) -> None:
    settings = creditlens_env(simulated("small"))
    defs = build_definitions(settings)
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert set(OUTPUTS) <= keys
    checks = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert {("balance_breaks", b) for b in (HIDDEN_MOVEMENTS, BREAKDOWN, SUMMARY)} <= checks
