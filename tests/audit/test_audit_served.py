"""A key in a file a browser is served is client-side, on every output: the terminal's finding,
JSON, SARIF (relative to the scanned root), the key_audit row and the report page's banner."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import duckdb

from dashboards import paths
from dashboards.site import build_site
from pipelines.audit.classify import assess
from pipelines.audit.report import ScanStats
from pipelines.audit.rules import served_to_browser
from pipelines.warehouse.severity import Severity
from simulator import ServerHandle, Simulator
from tests.audit.audit_cli_helpers import assert_no_key, run_cli, write
from tests.audit.audit_factories import (
    CAMPAIGNS_ONLY,
    FULL_ACCESS,
    entry,
    hit,
    judged,
    outcomes,
)
from tests.audit.audit_helpers import key_block, write_inventory
from tests.dashboards.pages import read_page, records


def test_served_files_are_told_by_suffix_or_by_a_folder_below_the_root() -> None:
    served = ["app.js", "web/index.HTML", "a/b/app.js.map", "static/k.txt", "x/dist/cfg.json"]
    served += ["public/.env", "build/settings.yaml", "lib/widget.mjs"]
    for path in served:
        assert served_to_browser(path), path
    for path in ["deploy.env", "src/config.py", "docs/builder/k.txt", "distribution/k.txt", ""]:
        assert not served_to_browser(path), path


def test_a_copy_in_a_served_file_makes_the_key_client_side_and_critical() -> None:
    copy = hit("/work/repo/web/dist/app.js", listed=True, line=2)
    result = judged(entry("k", "full", ("web/dist/app.js", "server")), FULL_ACCESS, (copy,))
    assert result.client_side_or_public
    (public,) = [f for f in result.findings if f.rule_id == "CLA002"]
    assert public.severity is Severity.CRITICAL
    assert "found in 1 file(s) a browser is served ('/work/repo/web/dist/app.js')" in (
        public.message
    )
    assert [(loc.path, loc.line) for loc in public.locations] == [("/work/repo/web/dist/app.js", 2)]
    # A restricted key there is client-side too: medium, as a listed client-side use is.
    restricted = judged(entry("k", "campaigns"), CAMPAIGNS_ONLY, (copy,))
    assert restricted.client_side_or_public and restricted.severity is Severity.MEDIUM


def test_folders_above_the_scanned_root_and_allowed_lines_do_not_count() -> None:
    above = hit("/home/build/repo/deploy.env", listed=False)
    allowed = replace(hit("/home/build/repo/web/app.js", listed=False), suppressed=True)
    result = assess(
        entry("k", "full"),
        fingerprint="0123456789abcdef",
        last4="1c3e",
        base_url="http://127.0.0.1:1",
        endpoints=outcomes(*FULL_ACCESS),
        hits=(above, allowed),
        scan=ScanStats(roots=("/home/build/repo",)),
    )
    assert not result.client_side_or_public
    assert "CLA002" not in {f.rule_id for f in result.findings}


def test_every_output_says_client_side_and_the_banner_does_not_reassure(
    tmp_path: Path, sim: Simulator, server: ServerHandle
) -> None:
    full = sim.key_for("acme")
    repo = tmp_path / "repo"
    write(repo / "public" / "config.txt", f"window.KEY = '{full}'\n")
    inventory = write_inventory(
        tmp_path, key_block("sync", "SYNC", "full", ("repo/public/config.txt", "server"))
    )
    json_out, sarif_out = tmp_path / "a.json", tmp_path / "a.sarif"
    warehouse = tmp_path / "w.duckdb"
    args = ["--inventory", str(inventory), "--base-url", server.url, "--scan", str(repo)]
    args += ["--json-out", str(json_out), "--sarif-out", str(sarif_out)]
    result = run_cli(args, {"SYNC": full, "CREDITLENS_WAREHOUSE": str(warehouse)})
    assert result.exit_code == 1, result.output
    assert "CLA002 client-side-or-public-use" in result.stdout
    assert "a browser is served" in result.stdout

    (key,) = json.loads(json_out.read_text())["keys"]
    assert key["client_side_or_public"] is True and key["severity"] == "critical"

    run = json.loads(sarif_out.read_text())["runs"][0]
    (public,) = [r for r in run["results"] if r["ruleId"] == "CLA002"]
    location = public["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "public/config.txt", "uriBaseId": "%SRCROOT%"}
    assert run["originalUriBaseIds"]["%SRCROOT%"] == {
        "description": {"text": "scanned root 1: repo"}
    }

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        row = con.execute("SELECT client_side_or_public, billing_exposed FROM key_audit").fetchone()
    finally:
        con.close()
    assert row == (True, False)  # a full key reads billing within its scope, but in public
    site = build_site(warehouse, tmp_path / "site", lock_timeout_s=60)
    page = (site.out_dir / paths.KEY_AUDIT).read_text(encoding="utf-8")
    [row] = records(read_page(site.out_dir / paths.KEY_AUDIT).rows[:2])
    assert row["Client-side or public"] == "yes" and row["Billing exposure"] == "no"
    assert "No key reads billing data beyond its scope" not in page
    assert "1 active key(s) used client-side or in public" in page
    assert_no_key([result.output, json_out.read_text(), sarif_out.read_text(), page], [full])
