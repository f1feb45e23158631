"""The audit as `creditlens audit` and as the Dagster asset: history in key_audit, no raw key
in the warehouse, the analyst copy or Dagster's event log."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from dagster import DagsterInstance

from pipelines.cli.runner import run_job
from pipelines.config.settings import AUDIT_SECRET_ENV, Settings
from pipelines.definitions import build_definitions
from simulator import ServerHandle, Simulator
from tests.audit.audit_helpers import key_block, write_inventory
from tests.conftest import Disposing
from tests.pipeline.helpers import cli, cli_in_process


@pytest.fixture
def audit_env(
    tmp_path: Path, sim: Simulator, server: ServerHandle, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    inventory = write_inventory(
        tmp_path,
        key_block("sync", "SYNC_KEY", "campaigns", ("creditlens sync", "server")),
        key_block("widget", "WIDGET_KEY", "campaigns", ("web widget", "client-side")),
    )
    env = {
        "SYNC_KEY": sim.key_for("acme"),
        "WIDGET_KEY": sim.key_for("acme", "campaigns"),
        "CREDITLENS_BASE_URL": server.url,
        "CREDITLENS_API_KEY": sim.key_for("acme"),
        "CREDITLENS_WAREHOUSE": str(tmp_path / "wh" / "warehouse.duckdb"),
        "CREDITLENS_AUDIT_INVENTORY": str(inventory),
        AUDIT_SECRET_ENV: "test-installation-secret",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def all_text(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in directory.rglob("*") if p.is_file())


@pytest.mark.slow
def test_cli_appends_history_and_never_stores_a_key(audit_env: dict[str, str]) -> None:
    # The first as a user's shell runs it; the second, which only has to add to the history,
    # through the same entry point in-process.
    results = [
        run("audit", "--inventory", audit_env["CREDITLENS_AUDIT_INVENTORY"])
        for run in (cli, cli_in_process)
    ]
    for result in results:
        assert result.returncode == 1, result.stderr  # billing readable beyond campaigns scope
    path = Path(audit_env["CREDITLENS_WAREHOUSE"])
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute(
            "SELECT key_name, status, billing_exposed, severity FROM key_audit ORDER BY ALL"
        ).fetchall()
        runs = con.execute("SELECT count(DISTINCT run_id) FROM key_audit").fetchone()
    assert runs == (2,)
    assert ("sync", "active", True, "high") in rows
    assert ("widget", "active", False, "medium") in rows
    dump = all_text(path.parent) + b"".join((r.stdout + r.stderr).encode() for r in results)
    for secret in (audit_env["SYNC_KEY"], audit_env["WIDGET_KEY"]):
        assert secret.encode() not in dump


def test_dagster_asset_lands_the_audit_and_its_events_hold_no_key(
    audit_env: dict[str, str], tmp_path: Path, disposing: Disposing
) -> None:
    instance = disposing(DagsterInstance.ephemeral())
    outcome = run_job(build_definitions(Settings.from_env()), "key_audit_run", instance)
    meta = outcome.materializations["key_audit"]
    assert meta["keys"] == 2 and meta["fails_high"] is True
    with duckdb.connect(audit_env["CREDITLENS_WAREHOUSE"], read_only=True) as con:
        assert con.execute("SELECT count(*) FROM key_audit").fetchone() == (2,)
        stored = dict(
            con.execute(
                "SELECT severity, count(DISTINCT finding_id) FROM key_audit_findings "
                "WHERE counted GROUP BY severity"
            ).fetchall()
        )
    # The asset lands the findings with its keys, and counts them as the CLI and page do.
    assert stored and meta["findings_counted"] == sum(stored.values())
    assert {s: meta[f"findings_{s}"] for s in stored} == stored
    records = instance.get_event_records(
        __import__("dagster").EventRecordsFilter(
            event_type=__import__("dagster").DagsterEventType.ASSET_MATERIALIZATION
        )
    )
    logs = "".join(str(r.event_log_entry) for r in records)
    logs += "".join(str(e) for run in instance.get_runs() for e in instance.all_logs(run.run_id))
    assert logs
    for secret in (audit_env["SYNC_KEY"], audit_env["WIDGET_KEY"]):
        assert secret not in logs
