"""Every account's verdict shows in the UI after a run that did not cover it.

Dagster shows a check's result only while it targets its asset's latest materialization. The
reconciliation is four assets and three checks for every account, each account's verdict its own
record of the check's ``account_records``; a run narrowed with ``--account`` carries the others'
verdicts from the warehouse, so the latest evaluation still shows every company. Proved here
with Dagster's own rule (``targets_latest_materialization``, what the UI asks) in a persistent
instance, as `dagster dev` over the same folder would show it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterInstance, SkipReason, build_schedule_context
from dagster._core.loader import LoadingContextForTest

from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from pipelines.orchestration.metadata import records_of
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


CHECK_KEYS = [
    AssetCheckKey(AssetKey("balance_breaks"), b) for b in (HIDDEN_MOVEMENTS, BREAKDOWN, SUMMARY)
]


def _shown(dagster_instance: DagsterInstance) -> dict[str, dict[str, dict[str, Any]]]:
    """What the UI shows of each check: per account, its record in the latest evaluation, when
    that evaluation targets the asset's latest materialization (else nothing: "Not
    Evaluated")."""
    context = LoadingContextForTest(dagster_instance)
    latest = dagster_instance.event_log_storage.get_latest_asset_check_execution_by_key(CHECK_KEYS)
    shown: dict[str, dict[str, dict[str, Any]]] = {}
    for key in CHECK_KEYS:
        record = latest.get(key)
        if record is None or not _run(record.targets_latest_materialization(context)):
            continue
        evaluation = record.evaluation
        assert evaluation is not None
        metadata = {k: v.value for k, v in evaluation.metadata.items()}
        shown[key.name] = {r["account"]: r for r in records_of(metadata)}
    return shown


def _run(awaitable: object) -> bool:
    return bool(asyncio.run(awaitable))  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_sync_of_one_account_still_shows_every_accounts_verdict(
    simulated: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One evaluation per check, every account its record (docs/scale-out.md, "One event per
    step, not per company"): a run narrowed to acme carries globex's verdict from the
    warehouse, and so does a run in which globex's sync fails (accounts_synced names it)."""
    _agency(simulated, tmp_path, monkeypatch)
    full = run_sync(Settings.from_env(), None, None)
    assert not full.failures(), full.failures()
    dagster_instance = cli_instance()
    shown = _shown(dagster_instance)
    assert set(shown) == {HIDDEN_MOVEMENTS, BREAKDOWN, SUMMARY}
    for records in shown.values():
        assert set(records) == {"acme", "globex"}
    skip = daily_refresh(build_schedule_context(instance=dagster_instance))
    assert isinstance(skip, SkipReason) and "already reconciled" in (skip.skip_message or "")

    only = run_sync(Settings.from_env(), None, None, accounts=["acme"])
    assert not only.failures() and only.reconciliation.run_id != full.reconciliation.run_id
    narrowed = _shown(dagster_instance)
    for name, records in narrowed.items():
        assert set(records) == {"acme", "globex"}, name
        assert records["globex"]["status"] == "carried"
        assert full.reconciliation.run_id in records["globex"]["message"]
        assert records["globex"]["passed"] == shown[name]["globex"]["passed"]
        assert records["acme"].get("status") != "carried"
    assert only.reconciliation_summary("acme") is not None
    for output in OUTPUTS:
        event = dagster_instance.get_latest_materialization_event(AssetKey(output))
        assert event is not None and event.run_id == only.reconciliation.run_id

    # A full run in which globex fails (its key revoked): globex's record is its failure line.
    monkeypatch.setenv("GLOBEX_KEY", "globex-key-revoked")
    failed = run_sync(Settings.from_env(), None, None)
    assert [f.account for f in failed.failures()] == ["globex"]
    # Its findings' verdicts stand as its latest reconciliation left them; its failure is
    # accounts_synced's to name, with its line.
    after = _shown(dagster_instance)
    for name, records in after.items():
        assert set(records) == {"acme", "globex"}
        assert records["globex"]["status"] == "carried"
        assert records["globex"]["passed"] == shown[name]["globex"]["passed"]
    passed, _severity, synced = failed.reconciliation.checks["accounts_synced"]
    assert not passed and "globex" in str(synced)


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
