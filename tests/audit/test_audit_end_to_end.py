"""The command as a scheduler runs it: probe over loopback, scan a tree, write JSON and SARIF,
exit by severity; and no spelling of any key in anything it produces."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from urllib.parse import quote

import pytest
import typer
from typer.testing import CliRunner

from pipelines.api.redact import needles
from pipelines.audit import key_fingerprint, run_audit
from pipelines.cli.audit_command import audit
from pipelines.config.settings import AUDIT_SECRET_ENV
from simulator import ServerHandle, Simulator
from tests.audit.audit_helpers import SECRET, key_block, write_inventory


def command() -> typer.Typer:
    app = typer.Typer()
    app.command()(audit)
    return app


@pytest.fixture
def estate(tmp_path: Path, sim: Simulator) -> dict[str, object]:
    """A repository with keys in plain, base64 and URL-encoded form, listed and not."""
    full, campaigns = sim.key_for("acme"), sim.key_for("acme", "campaigns")
    revoked = sim.key_for("acme", revoked=True)
    repo = tmp_path / "web"
    (repo / "static").mkdir(parents=True)
    (repo / "static" / "widget.js").write_text(f'const KEY = "{campaigns}";\n')
    (repo / "deploy").mkdir()
    blob = base64.b64encode(f'{{"X-Api-Key": "{full}"}}'.encode()).decode()
    (repo / "deploy" / "secret.yaml").write_text(f"kind: Secret\ndata:\n  headers: {blob}\n")
    (repo / "docs").mkdir()
    curl = f"curl 'https://proxy/?key={quote(full, safe='')}'\n"
    (repo / "docs" / "curl.md").write_text("# Try it\n\n" + curl)
    (repo / "old.env").write_text(f"API_KEY={revoked}\n")
    (repo / ".git").mkdir()
    (repo / ".git" / "config").write_text(full)
    ops = tmp_path / "ops"
    ops.mkdir()
    inventory = write_inventory(
        ops,
        key_block("sync", "SYNC", "campaigns", ("creditlens sync", "server")),
        key_block("widget", "WIDGET", "campaigns", ("web/static/widget.js", "client-side")),
        key_block("old", "OLD", "full", ("billing-service", "server")),
    )
    env = {"SYNC": full, "WIDGET": campaigns, "OLD": revoked}
    return {"inventory": inventory, "repo": repo, "env": env, "keys": [full, campaigns, revoked]}


def test_scan_finds_every_spelling_and_unlisted_places(estate: dict, server: ServerHandle) -> None:
    report = run_audit(
        estate["inventory"], [estate["repo"]], base_url=server.url, secret=SECRET, env=estate["env"]
    )
    hits = {(Path(h.path).name, h.key_name, h.encoding, h.listed) for h in report.scan_hits}
    assert hits == {
        ("widget.js", "widget", "plain", True),
        ("secret.yaml", "sync", "base64", False),
        ("curl.md", "sync", "url", False),
        ("old.env", "old", "plain", False),
    }
    curl = next(h for h in report.scan_hits if h.path.endswith("curl.md"))
    assert (curl.line, curl.fingerprint) == (3, key_fingerprint(estate["env"]["SYNC"], SECRET))
    by = {k.name: k for k in report.keys}
    unlisted = {
        f.locations[0].path.split("/")[-1]: f.severity.value
        for k in report.keys
        for f in k.findings
        if f.rule_id == "CLA003"
    }
    assert unlisted == {"secret.yaml": "high", "curl.md": "high", "old.env": "low"}
    assert by["widget"].severity.value == "medium"  # restricted key, but client-side
    assert by["sync"].severity.value == "high"  # campaigns-scoped key reading billing
    assert report.scan.files_scanned == 4


def test_cli_exit_codes_outputs_and_no_key_anywhere(
    estate: dict,
    server: ServerHandle,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    json_out, sarif_out = tmp_path / "audit.json", tmp_path / "audit.sarif"
    env = {**estate["env"], AUDIT_SECRET_ENV: SECRET.decode(), "COLUMNS": "200"}
    args = [
        "--inventory",
        str(estate["inventory"]),
        "--scan",
        str(estate["repo"]),
        "--base-url",
        server.url,
        "--json-out",
        str(json_out),
        "--sarif-out",
        str(sarif_out),
    ]
    result = CliRunner().invoke(command(), args, env=env)
    assert result.exit_code == 1, result.output
    for key in estate["keys"]:
        assert key_fingerprint(key, SECRET) in result.output
    assert "CLA001" in result.output and "scanned 4 file(s)" in result.output
    sarif = json.loads(sarif_out.read_text())
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} >= {"CLA001", "CLA003"}
    report = json.loads(json_out.read_text())
    assert report["severity"] == "high"

    assert "HTTP Request: GET" in caplog.text and "audited key sync" in caplog.text
    produced = "\n".join(
        [result.output, json_out.read_text(), sarif_out.read_text(), caplog.text]
        + [repr(r.__dict__) for r in caplog.records]
    )
    for key in estate["keys"]:
        for needle in needles(key):
            assert needle.value.decode() not in produced, needle.encoding

    assert CliRunner().invoke(command(), [*args, "--fail-on", "critical"], env=env).exit_code == 0


def test_cli_refuses_bad_inputs_with_exit_2(tmp_path: Path, server: ServerHandle) -> None:
    bad = tmp_path / "keys.toml"
    bad.write_text('[[keys]]\nname = "x"\nkey = "sk_live_abcdefabcdefabcdef"\nscope = "full"\n')
    env = {AUDIT_SECRET_ENV: "s"}
    result = CliRunner().invoke(command(), ["--inventory", str(bad)], env=env)
    assert result.exit_code == 2
    assert "must not be written" in result.output and "sk_live_abcdef" not in result.output
    good = write_inventory(tmp_path, key_block("k", "K", "full"))
    missing = ["--inventory", str(good), "--scan", str(tmp_path / "nope"), "--base-url", server.url]
    assert CliRunner().invoke(command(), missing, env=env).exit_code == 2
    wrong = ["--inventory", str(good), "--fail-on", "severe", "--base-url", server.url]
    assert CliRunner().invoke(command(), wrong, env=env).exit_code == 2


def test_a_clean_estate_exits_0(tmp_path: Path, sim: Simulator, server: ServerHandle) -> None:
    inventory = write_inventory(tmp_path, key_block("sync", "K", "full", ("sync", "server")))
    env = {"K": sim.key_for("acme"), AUDIT_SECRET_ENV: "s"}
    args = ["--inventory", str(inventory), "--base-url", server.url]
    assert CliRunner().invoke(command(), args, env=env).exit_code == 0


def test_a_copy_listed_by_another_entry_of_the_same_key_is_accounted_for(
    tmp_path: Path, sim: Simulator, server: ServerHandle
) -> None:
    key = sim.key_for("acme")
    (tmp_path / "sync").mkdir()
    (tmp_path / "sync" / ".env").write_text(f"CREDITLENS_API_KEY={key}\n")
    inventory = write_inventory(
        tmp_path,
        key_block("sync", "A", "full", ("./sync", "server")),
        key_block("reports", "B", "full", ("reporting cron", "server")),
    )
    report = run_audit(
        inventory, [tmp_path / "sync"], base_url=server.url, secret=SECRET, env={"A": key, "B": key}
    )
    assert [h.listed for h in report.scan_hits] == [True, True]
    assert report.findings == []
