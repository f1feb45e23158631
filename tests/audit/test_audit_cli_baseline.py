"""Baselines: accepted findings are shown and counted apart, only new ones fail the run; the
finding id survives edits above the line; allow-marked copies are counted, never findings."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from pipelines.audit.baseline import load_baseline
from simulator import ServerHandle, Simulator
from tests.audit.audit_cli_helpers import assert_no_key, one_error_line, run_cli, write
from tests.audit.audit_helpers import key_block, write_inventory


@pytest.fixture
def estate(tmp_path: Path, sim: Simulator, server: ServerHandle) -> dict:
    full = sim.key_for("acme")
    repo = tmp_path / "repo"
    write(repo / "deploy.env", f"# deploy\nAPI_KEY={full}\n")
    inventory = write_inventory(tmp_path, key_block("sync", "SYNC", "full", ("sync", "server")))
    return {
        "repo": repo,
        "env": {"SYNC": full},
        "key": full,
        "base": ["--inventory", str(inventory), "--base-url", server.url, "--scan", str(repo)],
    }


def test_a_baseline_reports_only_new_findings(estate: dict, tmp_path: Path) -> None:
    baseline = tmp_path / "audit-baseline.json"
    first = run_cli([*estate["base"], "--write-baseline", str(baseline)], estate["env"])
    # Writing a baseline accepts what is there now: shown as baselined, exit 0.
    assert first.exit_code == 0, first.output
    assert "[baselined]" in first.stdout and "1 baselined" in first.stdout
    doc = json.loads(baseline.read_text())
    assert [f["rule_id"] for f in doc["findings"]] == ["CLA003"]
    assert_no_key([baseline.read_text(), first.output], [estate["key"]])

    # Lines added above the copy: the same finding, still baselined.
    deploy = estate["repo"] / "deploy.env"
    deploy.write_text("# one\n# two\n" + deploy.read_text())
    again = run_cli([*estate["base"], "--baseline", str(baseline)], estate["env"])
    assert again.exit_code == 0, again.output
    assert "findings: 0 critical, 0 high, 0 medium, 0 low; 1 baselined" in again.stdout
    assert f"{deploy}:4:9" in again.stdout  # shown where it is now

    # A new copy is a new finding and fails the run; the old one stays baselined.
    write(estate["repo"] / "new.env", f"KEY={estate['key']}\n")
    new = run_cli([*estate["base"], "--baseline", str(baseline), "--format", "json"], estate["env"])
    assert new.exit_code == 1, new.output
    report = json.loads(new.stdout)
    assert report["findings_by_severity"]["high"] == 1 and report["findings_baselined"] == 1
    states = {
        f["locations"][0]["path"].rsplit("/", 1)[-1]: f["baselined"]
        for k in report["keys"]
        for f in k["findings"]
    }
    assert states == {"deploy.env": True, "new.env": False}


def test_baselined_findings_land_flagged_and_sarif_says_baseline_state(
    estate: dict, tmp_path: Path
) -> None:
    baseline, sarif = tmp_path / "b.json", tmp_path / "a.sarif"
    run_cli([*estate["base"], "--write-baseline", str(baseline)], estate["env"])
    write(estate["repo"] / "new.env", f"KEY={estate['key']}\n")
    warehouse = tmp_path / "w.duckdb"
    args = [*estate["base"], "--baseline", str(baseline), "--sarif-out", str(sarif)]
    result = run_cli(args, {**estate["env"], "CREDITLENS_WAREHOUSE": str(warehouse)})
    assert result.exit_code == 1, result.output
    assert "appended to key_audit and key_audit_findings" in result.stdout
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(
            "SELECT regexp_extract(path, '[^/]+$'), baselined, counted, finding_id "
            "FROM key_audit_findings ORDER BY path"
        ).fetchall()
    assert [r[:3] for r in rows] == [("deploy.env", True, False), ("new.env", False, True)]
    assert rows[0][3] in load_baseline(baseline)
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    states = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1]:
              r["baselineState"] for r in results}  # fmt: skip
    assert states == {"deploy.env": "unchanged", "new.env": "new"}


def test_allow_marked_copies_are_counted_not_found(estate: dict) -> None:
    write(estate["repo"] / "fixture.env", f"KEY={estate['key']}  # creditlens:allow\n")
    result = run_cli([*estate["base"], "--format", "json"], estate["env"])
    report = json.loads(result.stdout)
    assert report["scan_hits_suppressed"] == 1
    paths = [loc["path"] for k in report["keys"] for f in k["findings"] for loc in f["locations"]]
    assert not any(p.endswith("fixture.env") for p in paths)
    text = run_cli(estate["base"], estate["env"]).stdout
    assert "1 scan hit(s) suppressed by an allow marker" in text


def test_a_baseline_that_is_not_one_is_exit_2(estate: dict, tmp_path: Path) -> None:
    other = write(tmp_path / "other.json", '{"findings": []}')
    line = one_error_line(run_cli([*estate["base"], "--baseline", str(other)], estate["env"]))
    assert "is not a creditlens-audit-baseline file" in line
    missing = tmp_path / "nope.json"
    line = one_error_line(run_cli([*estate["base"], "--baseline", str(missing)], estate["env"]))
    assert "cannot read baseline" in line
