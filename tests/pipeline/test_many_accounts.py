"""Many companies in one installation: an accounts file, one `creditlens sync` for all of them.

Three companies on two simulated deployments: acme reads the API as creditlens does by
default, globex's deployment names and formats its range parameters otherwise, and initech's
key is rejected. The two good ones land exactly; initech is one line and exit 1; no key is in
any file the sync leaves behind (warehouse, analyst copy, staging, Dagster's storage).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

from dashboards import paths
from pipelines.cli.sync_command import run_sync, summary_lines
from pipelines.cli.sync_report import SyncReport
from pipelines.config.settings import Settings
from pipelines.orchestration.metadata import records_of
from pipelines.warehouse.outcomes import outcomes_of_sync
from simulator import NetworkSpec
from tests.conftest import Simulated, serving
from tests.pipeline.helpers import cli_in_process, copy_folder, landed, sync_reports, truth

Start = Callable[..., Simulated]

ACCOUNTS = """
[defaults]
base_url = "{acme_url}"

[[accounts]]
name = "acme"
api_key_env = "ACME_KEY"

[[accounts]]
name = "globex"
base_url = "{globex_url}"
api_key_env = "GLOBEX_KEY"
range_start_param = "from"
range_end_param = "to"
range_format = "datetime"

[[accounts]]
name = "initech"
api_key_env = "INITECH_KEY"
history_limit = 0
"""
REJECTED_KEY = "initech-key-that-the-platform-rejects"


Agency = tuple[Simulated, Simulated, dict[str, str]]


@pytest.fixture(scope="module")
def deployments() -> Iterator[tuple[Simulated, Simulated]]:
    """The two simulated deployments, served for the module: no test changes them."""
    with serving("small") as acme, serving("datetime_range", seed=1) as globex:
        yield acme, globex


def _environment(deployments: tuple[Simulated, Simulated], folder: Path) -> dict[str, str]:
    acme, globex = deployments
    config = folder / "agency.toml"
    config.write_text(ACCOUNTS.format(acme_url=acme.url, globex_url=globex.url))
    return {
        "CREDITLENS_CONFIG": str(config),
        "CREDITLENS_WAREHOUSE": str(folder / "warehouse.duckdb"),
        "CREDITLENS_REPORTS_DIR": str(folder / "reports"),
        "CREDITLENS_MAX_RETRIES": "8",
        "ACME_KEY": acme.key,
        "GLOBEX_KEY": globex.key,
        "INITECH_KEY": REJECTED_KEY,
    }


def _use(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CREDITLENS_") or name == "DAGSTER_HOME":
            monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def agency(
    deployments: tuple[Simulated, Simulated], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Agency:
    """The agency's environment, with a warehouse of the test's own, and Dagster's runs in an
    ephemeral instance: only the shared sync's is kept, for the files it leaves behind."""
    env = _environment(deployments, tmp_path) | {"CREDITLENS_DAGSTER_INSTANCE": "ephemeral"}
    _use(env, monkeypatch)
    return *deployments, env


@pytest.fixture(scope="module")
def one_sync(
    deployments: tuple[Simulated, Simulated], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, str], subprocess.CompletedProcess, SyncReport]:
    """One `creditlens sync` of the three companies, through the command's entry point, and the
    report the command made of it (read by a spy; the command runs as it always does): what it
    said and what it recorded are two views of the same sync, so they share it."""
    folder = tmp_path_factory.mktemp("agency")
    env = _environment(deployments, folder)
    with sync_reports() as reports, pytest.MonkeyPatch.context() as monkeypatch:
        _use({}, monkeypatch)  # only the agency's variables, as a user's shell would have
        result = cli_in_process("sync", env=env)
    [report] = reports
    return folder, env, result, report


@pytest.mark.slow
def test_two_companies_land_exactly_and_the_third_is_one_line(
    deployments: tuple[Simulated, Simulated],
    one_sync: tuple[Path, dict[str, str], subprocess.CompletedProcess, SyncReport],
) -> None:
    acme, globex = deployments
    tmp_path, env, result, _ = one_sync
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("creditlens:")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith("creditlens: error: account initech: ledger: ")
    assert "401" in errors[0] or "rejected" in errors[0].lower() or "nauthori" in errors[0]
    # The accounts' summaries (the month close's lines follow them: docs/statements.md).
    lines = [line for line in result.stdout.splitlines() if not line.startswith("statement")]
    assert [line.split(":", 1)[0] for line in lines] == ["acme", "globex"], result.stdout
    assert all("fetched" in line and "reconciliation:" in line for line in lines)

    warehouse = tmp_path / "warehouse.duckdb"
    assert landed(warehouse, "acme") == truth(acme)
    assert landed(warehouse, "globex") == truth(globex)
    assert landed(warehouse, "initech") == []
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        reconciled = con.execute("SELECT DISTINCT account FROM reconciliation_runs").fetchall()
    finally:
        con.close()
    assert sorted(reconciled) == [("acme",), ("globex",)]

    keys = [acme.key, globex.key, REJECTED_KEY]
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.name != "agency.toml":
            data = path.read_bytes()
            assert not any(k.encode() in data for k in keys), f"a key is in {path}"
    assert not any(k in result.stdout + result.stderr for k in keys)

    site = cli_in_process("report", env=env)
    assert site.returncode == 0, site.stderr
    for account in ("acme", "globex"):
        assert (tmp_path / "reports" / paths.overview(account)).is_file()
    findings = cli_in_process("breaks", "list", "--all", env=env)
    assert findings.returncode == 0, findings.stderr
    accounts = {line.split()[1] for line in findings.stdout.splitlines() if "  " in line}
    assert accounts <= {"acme", "globex"}, findings.stdout


@pytest.mark.slow
def test_checks_are_per_account_and_a_failed_account_fails_only_its_own(
    deployments: tuple[Simulated, Simulated],
    one_sync: tuple[Path, dict[str, str], subprocess.CompletedProcess, SyncReport],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = one_sync[3]  # the first sync's, the command's exit 1 shown above
    assert [f.account for f in report.failures()] == ["initech"]
    ledger = report.ledger.checks
    passed, _, synced = ledger["accounts_synced"]
    assert not passed and synced["accounts_failed"] == 1
    assert synced["account initech"].startswith("account initech: ledger: ")
    assert synced["account acme"] == synced["account globex"] == "synced"
    passed, _, invariant = ledger["fetched_equals_landed_plus_quarantined"]
    assert passed and invariant["account acme"].startswith("fetched ")
    assert ledger["entry_ids_unique"][0]
    checks = report.reconciliation.checks
    hidden = {r["account"]: r for r in records_of(checks["no_hidden_movements"][2])}
    reconciled = {a for a, r in hidden.items() if r.get("status") != "carried"}
    assert reconciled == {"acme", "globex"}  # reconciled only where it landed
    assert hidden["initech"]["message"] == "not in this run; never reconciled"
    assert [line.split(":", 1)[0] for line in summary_lines(report)] == ["acme", "globex"]
    assert report.ledger_result("acme").landed == len(truth(deployments[0]))
    # The snapshots share the ledger's run and skip the account whose ledger failed in it.
    assert report.ledger.run_id == report.snapshots.run_id != report.reconciliation.run_id
    recorded = outcomes_of_sync(report.warehouse, report.sync_id, lock_timeout_s=60)
    initech = [(o.step, o.result) for o in recorded if o.account == "initech"]
    skipped = [("snapshots", "skipped"), ("reconciliation", "skipped")]
    assert initech == [("ledger", "failed"), *skipped]
    assert len(report.snapshot_results("acme")) == len(report.snapshot_results("globex")) == 4

    copy_folder(one_sync[0], tmp_path)  # the next sync writes: a copy of the shared one
    _use(
        _environment(deployments, tmp_path) | {"CREDITLENS_DAGSTER_INSTANCE": "ephemeral"},
        monkeypatch,
    )
    only = run_sync(Settings.from_env(), None, None, accounts=["globex"])
    assert only.accounts == ("globex",) and not only.failures()
    bases = ("no_hidden_movements", "breakdown_matches_ledger", "summary_matches_ledger")
    assert set(only.reconciliation.checks) == {*bases, "accounts_synced"}  # ends with it
    for base in bases:  # globex reconciled, the others' verdicts carried from the warehouse
        records = {r["account"]: r for r in records_of(only.reconciliation.checks[base][2])}
        assert records["globex"].get("status") != "carried"
        assert {records[a]["status"] for a in ("acme", "initech")} == {"carried"}


@pytest.mark.slow
def test_an_unknown_account_is_one_line(agency: Agency) -> None:
    result = cli_in_process("sync", "--account", "umbrella", env=agency[2])
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "creditlens: error: no account named 'umbrella'; configured: acme, globex, initech"
    ]


@pytest.mark.slow
def test_a_rate_limited_key_is_absorbed_without_a_failed_sync(
    simulated: Start, creditlens_env: Callable[..., Settings]
) -> None:
    s = simulated("small", network=NetworkSpec(rate_limit_per_s=40, burst=4))
    settings = creditlens_env(s)
    report = run_sync(settings, None, None)
    assert landed(settings.warehouse, s.company) == truth(s)
    assert s.sim.traffic.rate_limited > 0, "the limiter never refused: the test proves nothing"
    assert not report.failures()


@pytest.mark.slow
def test_one_account_named_alone_fails_with_its_prefix_in_the_ledger_too(agency: Agency) -> None:
    """initech has no history discovery here: its key is refused by the ledger run, which
    still says which account it was when it is the run's only one."""
    result = cli_in_process("sync", "--account", "initech", env=agency[2])
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("creditlens:")]
    assert len(errors) == 1 and errors[0].startswith("creditlens: error: account initech: ledger: ")
