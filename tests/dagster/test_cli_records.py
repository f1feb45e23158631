"""What the CLI does outside a Dagster run is recorded in the instance the UI reads.

The catalog said "Never materialized" for ``ledger_history``, ``reports`` and ``key_audit``
although `creditlens sync` had discovered the history, `creditlens report` had built the site and
`creditlens audit` had landed its report. Each is now a runless materialization in the shared
instance, with the asset's own metadata, and only for the asset's whole work: a report narrowed
by --month, --account or --out, or an audit that lands nowhere (the pre-commit hook's), records
nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, EventLogEntry

from pipelines.cli.recorded import COMMAND_TAG, record_materialization
from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import AUDIT_SECRET_ENV, Settings
from pipelines.orchestration.automation import CLI_RUN_TAG
from tests.audit.audit_helpers import key_block, write_inventory
from tests.dagster.support import Env, Start, cli_instance, home
from tests.pipeline.helpers import cli_in_process


def _recorded(dagster_instance: DagsterInstance, asset: str) -> list[EventLogEntry]:
    records = dagster_instance.fetch_materializations(AssetKey(asset), limit=100).records
    return [r.event_log_entry for r in records]


def _by_the_cli(entry: EventLogEntry, command: str) -> dict[str, object]:
    mat = entry.asset_materialization
    assert mat is not None
    assert mat.tags is not None and mat.tags[CLI_RUN_TAG] == "true"
    assert mat.tags[COMMAND_TAG] == command
    return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}


@pytest.mark.slow
def test_discovery_and_a_whole_report_are_recorded_and_a_narrowed_report_is_not(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = simulated("small")
    settings = creditlens_env(s, persistent_dagster=True)
    home(monkeypatch, tmp_path)
    report = run_sync(settings, None, None)
    assert report.history is not None and report.history.first_day is not None
    dagster_instance = cli_instance()
    (history,) = _recorded(dagster_instance, "ledger_history")
    meta = _by_the_cli(history, "sync")
    assert meta["first_day"] == report.history.first_day.isoformat()
    assert meta["account"] == s.company and meta["dagster/row_count"] == 1
    assert run_sync(settings, None, None).history is None  # no discovery: nothing new recorded
    assert len(_recorded(dagster_instance, "ledger_history")) == 1

    month = report.last.isoformat()[:7]
    for narrowed in (
        ("--month", month),
        ("--account", s.company),
        ("--out", str(tmp_path / "elsewhere")),
    ):
        result = cli_in_process("report", *narrowed)
        assert result.returncode == 0, result.stderr
    assert _recorded(dagster_instance, "reports") == []

    result = cli_in_process("report")
    assert result.returncode == 0, result.stderr
    (site,) = _recorded(dagster_instance, "reports")
    meta = _by_the_cli(site, "report")
    assert f"({meta['pages']} pages)" in result.stdout
    assert meta["index"] == str(settings.reports_dir / "index.html")


@pytest.mark.slow
def test_an_audit_is_recorded_when_it_lands_in_the_warehouse_only(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = simulated("small")
    creditlens_env(s, persistent_dagster=True)
    monkeypatch.setenv("SYNC_KEY", s.key)
    monkeypatch.setenv(AUDIT_SECRET_ENV, "test-installation-secret")
    folder = home(monkeypatch, tmp_path)
    inventory = write_inventory(
        tmp_path, key_block("sync", "SYNC_KEY", "full", ("creditlens sync", "server"))
    )
    warehouse = str(tmp_path / "warehouse.duckdb")
    monkeypatch.delenv("CREDITLENS_WAREHOUSE")  # as the pre-commit hook runs it: no warehouse
    hook = cli_in_process("audit", "--inventory", str(inventory))
    assert hook.returncode in (0, 1), hook.stderr
    assert _recorded(cli_instance(), "key_audit") == []

    landed = cli_in_process(
        "audit", "--inventory", str(inventory), env={"CREDITLENS_WAREHOUSE": warehouse}
    )
    assert landed.returncode in (0, 1), landed.stderr
    assert "audit rows appended to key_audit" in landed.stdout
    (audit,) = _recorded(cli_instance(), "key_audit")
    meta = _by_the_cli(audit, "audit")
    assert meta["keys"] == 1 and meta["dagster/row_count"] == 1
    stored = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    assert s.key.encode() not in stored


def test_an_ephemeral_instance_records_nothing(
    simulated: Start, creditlens_env: Env, tmp_path: Path
) -> None:
    settings = creditlens_env(simulated("small"))  # CREDITLENS_DAGSTER_INSTANCE=ephemeral
    assert not record_materialization(settings, "reports", {"pages": 1}, "report")
    assert not any(tmp_path.rglob("dagster.yaml"))


def test_a_record_that_cannot_be_written_is_one_warning_line(
    simulated: Start,
    creditlens_env: Env,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    creditlens_env(simulated("small"), persistent_dagster=True)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the instance's folder should be")
    monkeypatch.setenv("DAGSTER_HOME", str(blocked))
    assert not record_materialization(Settings.from_env(), "reports", {"pages": 1}, "report")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "creditlens: warning: reports not recorded in the Dagster instance: "
    ), lines
