"""Alerts in Dagster: one check per rule with its evidence (ERROR for balance and runway, WARN
for the rest), the delivery job in the warehouse pool, and a sensor that follows every
reconciliation but the CLI's (the CLI delivers its own)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetCheckSeverity, AssetKey, DagsterRun

from pipelines.alerts.definitions import JOB, delivery_request
from pipelines.alerts.observe import credits
from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from pipelines.orchestration.automation import CLI_RUN_TAG
from pipelines.resources.warehouse import WAREHOUSE_POOL
from tests.alerts.helpers import above, balance
from tests.alerts.receivers import Received

Setup = tuple[dict[str, str], Received, int, int]


def test_each_rule_is_a_check_with_its_evidence(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, received, http_port, _ = setup
    config = Path(env["CREDITLENS_CONFIG"])
    config.write_text(f"""
[[channels]]
name = "hook"
url_env = "HOOK_URL"

[[alerts]]
name = "low-balance"
kind = "balance_below"
threshold = {above(env)}
channels = ["hook"]

[[alerts]]
name = "acme-budget"
kind = "budget"
dimension = "account"
monthly_limit = 1000000
""")
    for name, value in {**env, "HOOK_URL": f"json://127.0.0.1:{http_port}/hook"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(config.parent)
    defs = build_definitions(Settings.from_env())
    job = defs.resolve_job_def(JOB)
    node = defs.resolve_asset_graph().get(AssetKey("alerts"))
    assert node.pools == {WAREHOUSE_POOL}
    result = job.execute_in_process()
    assert result.success
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    low = next(c for name, c in checks.items() if name.startswith("alert_low_balance"))
    budget = next(c for name, c in checks.items() if name.startswith("alert_acme_budget"))
    assert (low.passed, low.severity) == (False, AssetCheckSeverity.ERROR)
    assert credits(balance(env)) in low.metadata["evidence"].value
    assert (budget.passed, budget.severity) == (True, AssetCheckSeverity.WARN)
    assert len(received.http) == 1  # delivered by the run
    assert job.execute_in_process().success and len(received.http) == 1  # once


def test_the_sensor_follows_reconciliations_but_not_the_cli() -> None:
    reconciled = DagsterRun(job_name="reconciliation_run", run_id="r1")
    assert delivery_request(reconciled).run_key == "alerts-after-r1"
    by_cli = DagsterRun(job_name="reconciliation_run", run_id="r2", tags={CLI_RUN_TAG: "1"})
    assert "CLI" in delivery_request(by_cli).skip_message
    refresh = DagsterRun(
        job_name="__ASSET_JOB", run_id="r3", asset_selection={AssetKey("balance_breaks")}
    )
    assert delivery_request(refresh).run_key == "alerts-after-r3"
    ledger = DagsterRun(job_name="ledger_sync", run_id="r4")
    assert "did not reconcile" in delivery_request(ledger).skip_message
