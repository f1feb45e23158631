"""The audit of an installation that syncs many companies: an accounts file, no inventory.

Two companies on two simulated deployments over loopback: acme's reads the ledger as creditlens
does by default, globex's names and formats its range parameters otherwise (``from``/``to``,
date-times). Probing globex's key with acme's parameters would earn it a 400 on the ledger and a
false "probe incomplete" finding; each key must be asked as its own account's sync asks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipelines.api.errors import ConfigurationError
from pipelines.audit import KeyStatus, Outcome, run_audit
from pipelines.audit.inventory import KeyEntry
from pipelines.audit.key_plan import match_account
from pipelines.audit.report import AuditReport, KeyResult
from pipelines.cli.audit_command import MISSING_INVENTORY
from pipelines.config.account import AccountSettings
from pipelines.config.settings import Settings
from simulator import Scenario, ServerHandle, Simulator, serve
from tests.audit.audit_cli_helpers import assert_no_key, one_error_line, run_cli, write
from tests.audit.audit_helpers import SECRET, key_block, write_inventory

ACCOUNTS = """
[[accounts]]
name = "acme"
base_url = "{acme_url}"
api_key_env = "ACME_KEY"

[[accounts]]
name = "acme-reports"          # the same key, another account: one key to audit
base_url = "{acme_url}"
api_key_env = "ACME_KEY"

[[accounts]]
name = "globex"
base_url = "{globex_url}"
api_key_env = "GLOBEX_KEY"
range_start_param = "from"
range_end_param = "to"
range_format = "datetime"
"""


@pytest.fixture(scope="module")
def globex() -> Iterator[tuple[Simulator, ServerHandle]]:
    scenario = Scenario.named("datetime_range", companies=[{"name": "globex", "history_days": 3}])
    other = Simulator(scenario)
    with serve(other) as handle:
        yield other, handle


@dataclass(frozen=True)
class Agency:
    config: Path
    keys: dict[str, str]  # by variable

    @property
    def env(self) -> dict[str, str]:
        return {"CREDITLENS_CONFIG": str(self.config), **self.keys}

    @property
    def cli_env(self) -> dict[str, str | None]:
        """The command's environment: a CREDITLENS_BASE_URL of the caller's is not inherited."""
        return {**self.env, "CREDITLENS_BASE_URL": None}

    def settings(self) -> Settings:
        return Settings.from_env(self.env, cwd=self.config.parent)


@pytest.fixture
def agency(
    tmp_path: Path,
    sim: Simulator,
    server: ServerHandle,
    globex: tuple[Simulator, ServerHandle],
) -> Agency:
    other, other_server = globex
    config = write(
        tmp_path / "agency.toml", ACCOUNTS.format(acme_url=server.url, globex_url=other_server.url)
    )
    return Agency(config, {"ACME_KEY": sim.key_for("acme"), "GLOBEX_KEY": other.key_for("globex")})


def transactions(key: KeyResult) -> Outcome:
    return next(e.outcome for e in key.endpoints if e.endpoint == "transactions")


def test_without_inventory_each_account_key_is_probed_with_its_own_range(
    agency: Agency, tmp_path: Path
) -> None:
    json_out, sarif_out = tmp_path / "audit.json", tmp_path / "audit.sarif"
    args = ["--format", "json", "--json-out", str(json_out), "--sarif-out", str(sarif_out)]
    result = run_cli(args, agency.cli_env)  # type: ignore[arg-type]
    assert result.exit_code == 0, (result.stdout, result.stderr)
    report = json.loads(result.stdout)  # stdout holds the document and nothing else
    assert "inventory derived from the accounts file" in result.stderr
    assert str(agency.config) in result.stderr and "no places listed" in result.stderr

    by = {k["name"]: k for k in report["keys"]}
    assert list(by) == ["acme", "globex"]  # acme-reports shares acme's variable: one key
    for key in by.values():
        outcomes = {e["endpoint"]: e["outcome"] for e in key["endpoints"]}
        assert set(outcomes.values()) == {"readable"}, outcomes
        assert "transactions" in key["billing_readable"]
        assert key["status"] == "active" and key["findings"] == []
        assert key["intended_scope"] == ["full"]
        assert key["note"].startswith(f"derived from the accounts file {agency.config}")
        assert "default ledger range" not in key["note"]
    assert "accounts acme, acme-reports (ACME_KEY)" in by["acme"]["note"]
    assert report["inventory"] == str(agency.config)

    sarif = json.loads(sarif_out.read_text())
    assert sarif["runs"][0]["properties"]["keysAudited"] == 2
    assert sarif["runs"][0]["results"] == []
    assert_no_key(
        [result.stdout, result.stderr, json_out.read_text(), sarif_out.read_text()],
        agency.keys.values(),
    )


def test_a_scan_still_finds_copies_of_a_derived_key(agency: Agency, tmp_path: Path) -> None:
    globex_key = agency.keys["GLOBEX_KEY"]
    leak = write(tmp_path / "web" / "config.js", f'const KEY = "{globex_key}";\n')
    result = run_cli(["--scan", str(leak.parent)], agency.cli_env)  # type: ignore[arg-type]
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("inventory derived from the accounts file ")
    assert lines[1] == "Key-exposure audit (2 keys), run " + lines[1].rsplit(" ", 1)[-1]
    assert "CLA003 unlisted-place" in result.stdout and f"{leak}:1:" in result.stdout
    assert "CLA005" not in result.stdout  # no false "probe incomplete" from wrong parameters
    assert_no_key([result.stdout, result.stderr], agency.keys.values())


def test_an_inventory_key_takes_the_range_of_its_account(
    agency: Agency,
    tmp_path: Path,
    sim: Simulator,
    server: ServerHandle,
    globex: tuple[Simulator, ServerHandle],
) -> None:
    other, other_server = globex
    settings = agency.settings()
    inventory = write_inventory(
        tmp_path,
        # By name: no base URL of its own, the account's.
        key_block("globex", "GLOBEX_KEY", "full", ("sync", "server")),
        # By base URL: the account at that URL.
        key_block("globex-bi", "GLOBEX_KEY", "full", base_url=other_server.url),
        # No account here: the API's defaults, said, not the first account's silently.
        key_block("acme-widget", "ACME_KEY", "campaigns", base_url=server.url + "/"),
    )
    with serve(other) as elsewhere:
        stray = key_block("stray", "GLOBEX_KEY", "full", base_url=elsewhere.url)
        inventory.write_text(inventory.read_text() + "\n" + stray)
        report = run_audit(inventory, settings=settings, secret=SECRET, env=agency.env)
    by = {k.name: k for k in report.keys}

    for name in ("globex", "globex-bi"):
        assert by[name].base_url == other_server.url
        assert transactions(by[name]) is Outcome.READABLE and by[name].findings == ()
        assert by[name].note == ""
    # acme's URL, however written: acme's parameters; its one finding is about its scope.
    assert transactions(by["acme-widget"]) is Outcome.READABLE
    assert [f.rule_id for f in by["acme-widget"].findings] == ["CLA001"]

    stray_key = by["stray"]
    assert stray_key.status is KeyStatus.ACTIVE
    assert transactions(stray_key) is Outcome.UNKNOWN
    assert stray_key.note == (
        "probed with the API's default ledger range parameters (startDate/endDate, date): "
        "no configured account has its name or its base URL"
    )
    (incomplete,) = stray_key.findings
    assert incomplete.rule_id == "CLA005" and "default ledger range" in incomplete.message
    assert_no_key([repr(report)], agency.keys.values())


def test_finding_ids_do_not_depend_on_the_accounts_file(
    agency: Agency, tmp_path: Path, server: ServerHandle
) -> None:
    """A baseline written before the accounts file still matches: same names, same ids."""
    widget = key_block("acme-widget", "ACME_KEY", "campaigns", base_url=server.url)
    inventory = write_inventory(tmp_path, widget)
    env = agency.env
    with_file = run_audit(inventory, settings=agency.settings(), secret=SECRET, env=env)
    alone = {"ACME_KEY": env["ACME_KEY"], "CREDITLENS_BASE_URL": server.url}
    without = run_audit(
        inventory, settings=Settings.from_env(alone, cwd=tmp_path), env=alone, secret=SECRET
    )

    def ids(report: AuditReport) -> list[str]:
        return [f.finding_id for f in report.findings]

    assert ids(with_file) and ids(with_file) == ids(without)


def test_matching_rule() -> None:
    def account(name: str, url: str, start: str = "startDate") -> AccountSettings:
        return AccountSettings(name=name, base_url=url, api={"range_start_param": start})

    a, b = account("a", "http://a.test"), account("b", "http://b.test", "from")
    twin = account("b2", "http://b.test", "since")
    entry = KeyEntry(name="a", scope=("full",), env="K")
    assert match_account(entry, [a, b], None) == (a, "")  # by name
    renamed = KeyEntry(name="other", scope=("full",), env="K")
    assert match_account(renamed, [a, b], "http://b.test") == (b, "")  # by URL
    assert match_account(renamed, [b], None) == (b, "")  # the only account
    assert match_account(renamed, [a, b], None)[0] is None
    unmatched, why = match_account(renamed, [a, b, twin], "http://b.test")
    assert unmatched is None and "(b, b2) differ in their range parameters" in why


def test_no_inventory_and_no_accounts_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./creditlens.toml
    line = one_error_line(run_cli([], {"CREDITLENS_CONFIG": None}))  # type: ignore[dict-item]
    assert line == f"creditlens: error: {MISSING_INVENTORY}"
    assert "missing option --inventory: the key inventory file" in line
    assert "CREDITLENS_CONFIG or ./creditlens.toml" in line
    with pytest.raises(ConfigurationError, match="no key inventory"):
        run_audit(None, settings=Settings.from_env({}, cwd=tmp_path), secret=SECRET, env={})
