"""An agency's sync tells the truth: exit codes, lines per account, every account recorded.

Three companies in one accounts file: acme has hidden movements and a breakdown mismatch, globex
is clean but went quiet at zero for two years (a quiet period, not its beginning), initech's key
is rejected (in history discovery, before any Dagster run). Findings are
a result, not a failure: exit 0, 3 with --fail-on-breaks; a failed account is exit 1 whatever
else happened (1 wins over 3), its one line on stderr, the others summarized on stdout. Every
step of every account is a row of sync_outcomes, and the site lists every account with its status.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from dashboards import paths
from pipelines.cli.sync_command import run_sync, summary_lines
from pipelines.cli.sync_report import SyncReport
from pipelines.config.settings import Settings
from pipelines.orchestration.metadata import records_of
from pipelines.reconciliation.run import ReconcileOptions, ReconciliationResult, SharedReads
from pipelines.snapshots.registry import TABLES as SNAPSHOT_TABLES
from pipelines.warehouse.writer import AccountReplacement, StagedDerived
from simulator import Scenario
from simulator.scenario import BreakdownMismatchSpec
from tests.conftest import Simulated, serving
from tests.pipeline.helpers import cli_in_process, copy_folder, sync_reports, table
from tests.pipeline.scenarios import quiet_at_zero_2y

ACCOUNTS = """
[[accounts]]
name = "acme"
base_url = "{acme_url}"
api_key_env = "ACME_KEY"

[[accounts]]
name = "globex"
base_url = "{globex_url}"
api_key_env = "GLOBEX_KEY"
{initech}"""
INITECH = """
[[accounts]]
name = "initech"
base_url = "{globex_url}"
api_key_env = "INITECH_KEY"
"""
REJECTED_KEY = "initech-key-that-the-platform-rejects"
INITECH_LINE = "creditlens: error: account initech: discovery: "


@dataclass
class Agency:
    acme: Simulated
    globex: Simulated
    folder: Path
    env: dict[str, str]

    def secrets(self) -> list[str]:
        return [self.acme.key, self.globex.key, REJECTED_KEY]


def _findings_scenario() -> Scenario:
    mismatch = [BreakdownMismatchSpec(delta=Decimal("12.5"), item=0)]
    return Scenario.named("hidden_movements").with_company("acme", breakdown_mismatches=mismatch)


@pytest.fixture(scope="module")
def simulators() -> Iterator[tuple[Simulated, Simulated]]:
    with serving(_findings_scenario()) as acme, serving(quiet_at_zero_2y(), seed=1) as globex:
        yield acme, globex


def _agency(simulators: tuple[Simulated, Simulated], folder: Path, *, rejected: bool) -> Agency:
    acme, globex = simulators
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "agency.toml"
    initech = INITECH.format(globex_url=globex.url) if rejected else ""
    config.write_text(ACCOUNTS.format(acme_url=acme.url, globex_url=globex.url, initech=initech))
    env = {
        "CREDITLENS_CONFIG": str(config),
        "CREDITLENS_WAREHOUSE": str(folder / "warehouse.duckdb"),
        "CREDITLENS_REPORTS_DIR": str(folder / "reports"),
        "CREDITLENS_MAX_RETRIES": "8",
        "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
        "ACME_KEY": acme.key,
        "GLOBEX_KEY": globex.key,
        "INITECH_KEY": REJECTED_KEY,
    }
    return Agency(acme, globex, folder, env)


def _clean_environment() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CREDITLENS_") and k != "DAGSTER_HOME"
    }


def run(agency: Agency, *args: str) -> subprocess.CompletedProcess:
    return cli_in_process(*args, env={**_clean_environment(), **agency.env}, inherit=False)


def _no_dump(text: str) -> None:
    """Never a dict, a repr or a traceback on a terminal."""
    assert "Traceback" not in text and "{'" not in text and "Error(" not in text, text


def _said(stderr: str) -> list[str]:
    """What the command said on stderr (the progress lines aside)."""
    return [line for line in stderr.splitlines() if line.startswith("creditlens:")]


def _outcomes(agency: Agency) -> list[tuple]:
    return table(
        agency.folder / "warehouse.duckdb",
        "SELECT account, step, result, part, error FROM sync_outcomes WHERE sync_id = "
        "(SELECT arg_max(sync_id, recorded_at) FROM sync_outcomes) ORDER BY account, step, part",
    )


Rejected = tuple[Agency, subprocess.CompletedProcess, SyncReport]


@pytest.fixture(scope="module")
def rejected(
    simulators: tuple[Simulated, Simulated], tmp_path_factory: pytest.TempPathFactory
) -> Rejected:
    """One sync of the three companies, through the command, and the report the command made
    of it (read by a spy; the command runs as it always does): what it said and what its checks
    recorded are two views of the same sync, so the tests of each share it."""
    agency = _agency(simulators, tmp_path_factory.mktemp("agency") / "rejected", rejected=True)
    with sync_reports() as reports:
        result = run(agency, "sync")
    [report] = reports
    return agency, result, report


@pytest.fixture(scope="module")
def clean(
    simulators: tuple[Simulated, Simulated], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Agency, subprocess.CompletedProcess, Path]:
    """One first sync of acme and globex alone, through the command with the gate, and a copy
    of the folder it left (before any test adds to it): a test that needs a synced agency
    starts from the copy instead of syncing both companies' whole ledgers again."""
    root = tmp_path_factory.mktemp("agency")
    agency = _agency(simulators, root / "clean", rejected=False)
    result = run(agency, "sync", "--fail-on-breaks")
    copy_folder(agency.folder, root / "synced")
    return agency, result, root / "synced"


@pytest.mark.slow
def test_one_sync_of_three_companies_says_each_one_truthfully(rejected: Rejected) -> None:
    agency, first, _ = rejected
    assert first.returncode == 1, first.stderr
    errors = [line for line in first.stderr.splitlines() if line.startswith("creditlens:")]
    assert len(errors) == 1 and errors[0].startswith(INITECH_LINE), first.stderr
    _no_dump(first.stdout + first.stderr)
    summaries = [
        line for line in first.stdout.splitlines() if not line.startswith((" ", "statement"))
    ]
    assert [line.split(":", 1)[0] for line in summaries] == ["acme", "globex"], first.stdout
    assert "hidden movement(s)" in summaries[0] and "0 not acknowledged" not in summaries[0]
    findings = first.stdout.split("\nglobex:")[0].splitlines()[1:]
    assert any(line.startswith("  hidden movement ") for line in findings), first.stdout
    assert any(line.startswith("  breakdown mismatch ") for line in findings), first.stdout
    assert "0 hidden movement(s)" in summaries[1] and "0 not acknowledged" in summaries[1]
    assert ", quiet period: no entries from " in summaries[1], summaries[1]  # not its beginning
    assert f"history: the ledger begins {agency.globex.first_day.isoformat()}" in summaries[1]

    rows = _outcomes(agency)
    initech = [(step, result) for account, step, result, _, _ in rows if account == "initech"]
    assert sorted(initech) == sorted(
        [("discovery", "failed"), ("ledger", "skipped"), ("snapshots", "skipped"),
         ("reconciliation", "skipped")]
    )  # fmt: skip
    [line] = [error for account, _, result, _, error in rows if result == "failed"]
    assert INITECH_LINE.removeprefix("creditlens: error: ") in line and line in errors[0]
    for name in ("acme", "globex"):
        steps = {(step, part): result for account, step, result, part, _ in rows if account == name}
        assert steps[("discovery", None)] == steps[("ledger", None)] == "ok"
        assert steps[("reconciliation", None)] == "ok"
        snapshots = {part: r for (s, part), r in steps.items() if s == "snapshots"}
        assert snapshots == dict.fromkeys(SNAPSHOT_TABLES, "ok")
    status = dict(
        table(agency.folder / "warehouse.duckdb", "SELECT account, status FROM account_status")
    )
    assert status == {"acme": "ok", "globex": "ok", "initech": "never synced"}

    # 1 wins over 3: the findings are still there, and so is the failed account.
    gate = run(agency, "sync", "--fail-on-breaks")
    assert gate.returncode == 1, gate.stderr
    assert [line for line in gate.stderr.splitlines() if line.startswith("creditlens: error")] == [
        errors[0].split(": discovery: ")[0] + ": discovery: " + errors[0].split(": discovery: ")[1]
    ]

    site = run(agency, "report")
    assert site.returncode == 0, site.stderr
    _no_dump(site.stdout + site.stderr)
    reports = agency.folder / "reports"
    index = (reports / paths.SITE_INDEX).read_text()
    for name in ("acme", "globex", "initech"):
        assert f">{name}<" in index
    assert "never synced" in index and "account initech: discovery: " in index
    page = (reports / paths.account_status("initech")).read_text()
    assert "account initech: discovery: " in page and "api_key_env" in page
    assert "creditlens sync --account initech" in page
    assert (reports / paths.overview("acme")).is_file()

    listed = run(agency, "breaks", "list")
    assert listed.returncode == 0, listed.stderr
    accounts = {line.split()[1] for line in listed.stdout.splitlines()}
    assert accounts == {"acme"}, listed.stdout

    audit = run(agency, "audit", "--format", "text")
    _no_dump(audit.stdout + audit.stderr)
    assert audit.returncode in (0, 1), audit.stderr  # findings or none, never a crash (2)

    for path in agency.folder.rglob("*"):
        if path.is_file() and path.name != "agency.toml":
            data = path.read_bytes()
            assert not any(k.encode() in data for k in agency.secrets()), f"a key is in {path}"
    outputs = first.stdout + first.stderr + site.stdout + audit.stdout + audit.stderr
    assert not any(k in outputs for k in agency.secrets())


@pytest.mark.slow
def test_accounts_synced_names_an_account_rejected_in_discovery(rejected: Rejected) -> None:
    _, _, report = rejected  # the checks of the sync whose output the test above reads
    assert report.ledger.success and report.reconciliation.success  # findings fail nothing
    passed, severity, synced = report.ledger.checks["accounts_synced"]
    assert not passed and severity == "ERROR"
    assert synced["accounts_failed"] == 1 and synced["accounts"] == 3
    assert synced["account initech"].startswith("account initech: discovery: ")
    assert synced["account acme"] == synced["account globex"] == "synced"
    passed, _, last = report.reconciliation.checks["accounts_synced"]  # the sync's last word
    assert not passed and last["account initech"] == synced["account initech"]
    passed, severity, hidden = report.reconciliation.checks["no_hidden_movements"]
    assert not passed and severity == "ERROR"
    records = {r["account"]: r for r in records_of(hidden)}
    assert not records["acme"]["passed"] and records["acme"]["breaks"]
    assert records["globex"]["passed"]  # one account's findings fail only its own record


@pytest.mark.slow
def test_without_a_failed_account_findings_exit_0_and_3_with_the_gate(
    clean: tuple[Agency, subprocess.CompletedProcess, Path],
) -> None:
    agency, result, _ = clean
    assert result.returncode == 3, result.stderr
    assert _said(result.stderr) == [
        "creditlens: reconciliation found unacknowledged breaks (--fail-on-breaks)"
    ]
    summaries = [
        line for line in result.stdout.splitlines() if not line.startswith((" ", "statement"))
    ]
    assert [line.split(":", 1)[0] for line in summaries] == ["acme", "globex"]
    again = run(agency, "sync")
    assert again.returncode == 0, again.stderr
    assert _said(again.stderr) == [] and "  hidden movement " in again.stdout
    _no_dump(again.stdout)
    site = run(agency, "report")
    assert site.returncode == 0, site.stderr
    index = (agency.folder / "reports" / paths.SITE_INDEX).read_text()
    assert "Sync status" in index and "failing" not in index
    listed = run(agency, "breaks", "list", "--account", "acme")
    assert listed.returncode == 0 and "acme" in listed.stdout, listed.stderr
    audit = run(agency, "audit", "--format", "text")
    _no_dump(audit.stdout + audit.stderr)
    assert audit.returncode in (0, 1), audit.stderr


def test_one_account_of_the_file_alone_still_says_which(
    simulators: tuple[Simulated, Simulated], tmp_path: Path
) -> None:
    agency = _agency(simulators, tmp_path / "alone", rejected=True)
    result = run(agency, "sync", "--account", "initech")
    assert result.returncode == 1
    assert [line for line in result.stderr.splitlines() if line.startswith("creditlens:")] == [
        line for line in result.stderr.splitlines() if line.startswith(INITECH_LINE)
    ]
    assert result.stderr.startswith(INITECH_LINE), result.stderr


@pytest.mark.slow
def test_one_account_failing_its_reconciliation_fails_only_its_own(
    simulators: tuple[Simulated, Simulated],
    clean: tuple[Agency, subprocess.CompletedProcess, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reconciliation isolates accounts as the ledger and the snapshots do. What breaks
    globex's reconciliation is injected (no data makes it fail on demand); the isolation around
    it is the code under test. The sync is the next one after the shared clean first sync (a
    copy of it): every account is reconciled again on every sync, the first or not."""
    from pipelines.reconciliation import assets

    real = assets.stage_account

    def broken_for_globex(
        source: AccountReplacement,
        shared: SharedReads,
        account: str,
        options: ReconcileOptions,
        run_id: str,
        root: Path,
        *,
        full: bool = False,
    ) -> tuple[ReconciliationResult, StagedDerived]:
        if account == "globex":
            raise ValueError("tolerance must not be negative")
        return real(source, shared, account, options, run_id, root, full=full)

    monkeypatch.setattr(assets, "stage_account", broken_for_globex)
    copy_folder(clean[2], tmp_path / "isolated")
    agency = _agency(simulators, tmp_path / "isolated", rejected=False)
    for name in [n for n in os.environ if n.startswith("CREDITLENS_")]:
        monkeypatch.delenv(name)
    for name, value in agency.env.items():
        monkeypatch.setenv(name, value)
    report = run_sync(Settings.from_env(), None, None)
    assert report.reconciliation.success
    [failure] = report.failures()
    assert failure.line() == (
        "account globex: reconciliation: unexpected ValueError: tolerance must not be negative"
    )
    checks = report.reconciliation.checks
    hidden = {r["account"]: r for r in records_of(checks["no_hidden_movements"][2])}
    assert not hidden["globex"]["passed"] and hidden["globex"]["error"] == failure.line()
    breakdown = {r["account"]: r for r in records_of(checks["breakdown_matches_ledger"][2])}
    assert breakdown["acme"]["breaks"]  # acme was reconciled
    passed, _, synced = checks["accounts_synced"]  # evaluated after the reconciliation
    assert not passed and synced["account globex"] == failure.line()
    assert synced["account acme"] == "synced" and report.ledger.checks["accounts_synced"][0]
    assert [line.split(":", 1)[0] for line in summary_lines(report) if line[0] != " "] == ["acme"]
    rows = table(
        agency.folder / "warehouse.duckdb",
        "SELECT account, result, error FROM sync_outcomes WHERE step = 'reconciliation' "
        f"AND sync_id = '{report.sync_id}'",
    )
    assert sorted(rows) == [("acme", "ok", None), ("globex", "failed", failure.line())]


@pytest.mark.slow
def test_a_blocking_check_of_the_ledger_is_one_line_without_its_metadata(
    simulated: Callable[..., Simulated], creditlens_env: Callable[..., Settings]
) -> None:
    """The ledger's exactness still blocks, and says so in a sentence, never a dict."""
    s = simulated("small")
    settings = creditlens_env(s, CREDITLENS_HISTORY_LIMIT="0")
    day = s.first_day.isoformat()
    assert cli_in_process("sync", "--since", day, "--until", day).returncode == 0
    con = duckdb.connect(str(settings.warehouse))
    try:  # a copy of an entry: what the identity rule exists to prevent
        con.execute("INSERT INTO ledger_entries SELECT * FROM ledger_entries LIMIT 1")
    finally:
        con.close()
    later = (s.first_day + timedelta(days=1)).isoformat()
    result = cli_in_process("sync", "--since", later, "--until", later)
    assert result.returncode == 1
    assert _said(result.stderr) == [
        f"creditlens: error: blocking check failed: entry_ids_unique: repeated entry ids in "
        f"{s.company}"
    ]


def test_every_account_failing_for_one_reason_is_one_line_counting_them(
    simulators: tuple[Simulated, Simulated],
    clean: tuple[Agency, subprocess.CompletedProcess, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 500 companies DuckDB ran out of memory in the reconciliation's commit for every one
    of them, and the step's failure, the command's one error line, said that reason once per
    company: about 100 KB. The same reason is now said once, the accounts counted."""
    from pipelines.reconciliation import assets

    def broken(*args: object, **kwargs: object) -> tuple[ReconciliationResult, StagedDerived]:
        raise ValueError("tolerance must not be negative")

    monkeypatch.setattr(assets, "stage_account", broken)
    copy_folder(clean[2], tmp_path / "all-failed")
    agency = _agency(simulators, tmp_path / "all-failed", rejected=False)
    done = run(agency, "sync")
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("creditlens: error:")]
    reason = "reconciliation: unexpected ValueError: tolerance must not be negative"
    assert errors == [f"creditlens: error: 2 accounts (acme, globex): {reason}"], done.stderr


def test_the_same_reason_for_many_accounts_is_one_line_counting_them() -> None:
    from pipelines.orchestration.account_work import AccountFailure, grouped_lines

    memory = "DuckDB ran out of memory (61.0 MiB allowed) working on w.duckdb: nothing was changed"
    failed = [AccountFailure(f"company-{n:03d}", "reconciliation", memory, "x") for n in range(500)]
    failed.insert(1, AccountFailure("ghostco", "ledger", "the API key was rejected", "x"))
    assert grouped_lines(failed) == [
        "500 accounts (company-000, company-001, company-002 and 497 more): reconciliation: "
        + memory,
        "account ghostco: ledger: the API key was rejected",
    ]
    assert grouped_lines(failed[:1]) == [f"account company-000: reconciliation: {memory}"]
