"""Outputs: SARIF valid against the official 2.1.0 schema, JSON, DuckDB rows, exit codes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import duckdb
import jsonschema
import pytest

from pipelines.audit.baseline import apply_baseline
from pipelines.audit.report import exit_code, severity_counts, to_json
from pipelines.audit.sarif import to_sarif
from pipelines.warehouse.severity import Severity
from pipelines.warehouse.writer import Warehouse
from tests.audit.audit_factories import (
    CAMPAIGNS_ONLY,
    FULL_ACCESS,
    REVOKED,
    R,
    U,
    entry,
    hit,
    judged,
    report,
)

SCHEMA = json.loads((Path(__file__).parent / "sarif-schema-2.1.0.json").read_text())


def sample():
    return report(
        judged(
            entry("widget", "campaigns", ("web/static/widget.js", "client-side")),
            FULL_ACCESS,
            (hit("/repo/leak with space.env", listed=False, line=4, encoding="base64url"),),
        ),
        judged(entry("crm", "campaigns", ("Acme CRM", "vendor")), CAMPAIGNS_ONLY),
        judged(entry("old", "full", ("billing-service", "server")), REVOKED),
        judged(entry("flaky", "campaigns", ("billing-service", "server")), (R, U, U, U, U)),
        roots=("/repo",),
    )


def validate(doc: dict) -> None:
    validator = jsonschema.Draft4Validator(
        SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def test_sarif_is_valid_and_carries_rules_levels_locations_and_fingerprints() -> None:
    doc = to_sarif(sample())
    validate(doc)
    run = doc["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert rule_ids == [f"CLA00{i}" for i in range(1, 9)]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert by_rule["CLA001"]["level"] == "error"  # critical
    assert by_rule["CLA004"]["level"] == "note"  # low
    assert by_rule["CLA005"]["level"] == "note"
    for result in run["results"]:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        assert result["partialFingerprints"]["keyFingerprint/v1"] == "0123456789abcdef"
    physical = by_rule["CLA003"]["locations"][0]["physicalLocation"]
    # Relative to the scanned root, never the machine's absolute path.
    assert physical["artifactLocation"] == {
        "uri": "leak%20with%20space.env",
        "uriBaseId": "%SRCROOT%",
    }
    assert run["originalUriBaseIds"] == {
        "%SRCROOT%": {"description": {"text": "scanned root 1: repo"}}
    }
    uris = [
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in run["results"]
        for loc in r.get("locations", ())
        if "physicalLocation" in loc
    ]
    assert uris and not any(u.startswith(("file:", "/")) for u in uris)
    assert physical["region"] == {"startLine": 4, "startColumn": 5}
    logical = by_rule["CLA002"]["locations"][0]["logicalLocations"][0]
    assert logical["name"] == "web/static/widget.js"


def test_sarif_of_a_clean_run_is_valid_and_empty() -> None:
    doc = to_sarif(report(judged(entry("sync", "full"), FULL_ACCESS)))
    validate(doc)
    assert doc["runs"][0]["results"] == []


def test_the_validator_does_reject_a_broken_log() -> None:
    doc = to_sarif(sample())
    doc["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(AssertionError):
        validate(doc)


def test_json_report_round_trips_with_severities_and_counts() -> None:
    doc = json.loads(to_json(sample()))
    assert doc["severity"] == "critical"
    assert doc["findings_by_severity"] == {"low": 2, "medium": 0, "high": 1, "critical": 2}
    widget = doc["keys"][0]
    assert widget["status"] == "active" and widget["billing_exposed"] is True
    assert widget["endpoints"][1] == {
        "endpoint": "consumption",
        "path": "/Consumption",
        "outcome": "readable",
        "http_status": None,
        "reason": "",
    }


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [("critical", 1), ("high", 1), ("medium", 1), ("low", 1), ("none", 1)],
)
def test_exit_code_with_a_critical_finding(fail_on: str, code: int) -> None:
    assert exit_code(sample(), fail_on) == code


def test_exit_code_thresholds() -> None:
    revoked_only = report(judged(entry("old", "full"), REVOKED))  # one low finding
    assert exit_code(revoked_only, "high") == 0
    assert exit_code(revoked_only, Severity.LOW) == 1
    clean = report(judged(entry("sync", "full"), FULL_ACCESS))
    assert exit_code(clean, "none") == 0
    with pytest.raises(ValueError, match="unknown severity 'severe'"):
        exit_code(clean, "severe")


def test_rows_land_in_a_real_duckdb_table(tmp_path: Path) -> None:
    rows = sample().rows()
    path = tmp_path / "w.duckdb"
    Warehouse(path, lock_timeout_s=60).append("key_audit", rows)
    with duckdb.connect(str(path)) as con:
        columns = [c[0] for c in con.execute("DESCRIBE key_audit").fetchall()]
        assert list(rows[0]) == columns
        got = con.execute(
            "SELECT key_name, status, endpoints_readable, endpoints_unknown, billing_exposed, "
            "client_side_or_public, severity, findings, places_found FROM key_audit "
            "ORDER BY key_name"
        ).fetchall()
    assert got == [
        ("crm", "active", ["campaign"], [], False, False, "none", 0, []),
        (
            "flaky",
            "active",
            ["campaign"],
            ["consumption", "breakdown", "subscription", "transactions"],
            False,
            False,
            "low",
            1,
            [],
        ),
        ("old", "rejected", [], [], False, False, "low", 1, []),
        (
            "widget",
            "active",
            ["campaign", "consumption", "breakdown", "subscription", "transactions"],
            [],
            True,
            True,
            "critical",
            3,
            ["/repo/leak with space.env"],
        ),
    ]


def test_finding_rows_land_one_per_location_in_a_real_duckdb_table(tmp_path: Path) -> None:
    tables = sample().tables()
    assert set(tables) == {"key_audit", "key_audit_findings"}
    path = tmp_path / "w.duckdb"
    warehouse = Warehouse(path, lock_timeout_s=60)
    for table, rows in tables.items():
        warehouse.append(table, rows)
    findings = tables["key_audit_findings"]
    with duckdb.connect(str(path)) as con:
        columns = [c[0] for c in con.execute("DESCRIBE key_audit_findings").fetchall()]
        assert list(findings[0]) == columns
        comments = con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'key_audit_findings' "
            "AND (comment IS NULL OR comment = '')"
        ).fetchall()
        assert comments == []
        got = con.execute(
            "SELECT key_name, rule_id, severity, path, line, place, place_kind, "
            "billing_readable, counted FROM key_audit_findings ORDER BY rule_id, key_name"
        ).fetchall()
    consumption = ["consumption", "breakdown", "subscription", "transactions"]
    assert got == [
        ("widget", "CLA001", "critical", None, None, "web/static/widget.js", "client-side",
         consumption, True),
        ("widget", "CLA002", "critical", None, None, "web/static/widget.js", "client-side",
         consumption, True),
        ("widget", "CLA003", "high", "/repo/leak with space.env", 4, None, None, consumption,
         True),
        ("old", "CLA004", "low", None, None, "billing-service", "server", [], True),
        ("flaky", "CLA005", "low", None, None, "billing-service", "server", [], True),
    ]  # fmt: skip
    assert len({r["finding_id"] for r in findings}) == len(sample().findings)


def test_counts_and_exit_code_leave_baselined_findings_out() -> None:
    audited = sample()
    ids = frozenset(f.finding_id for f in audited.findings if f.severity >= Severity.HIGH)
    accepted = apply_baseline(audited, ids, Path("b.json"))
    assert severity_counts(accepted) == {"low": 2, "medium": 0, "high": 0, "critical": 0}
    assert json.loads(to_json(accepted))["findings_baselined"] == 3
    assert exit_code(accepted, "high") == 0 and exit_code(accepted, "low") == 1
    assert exit_code(audited, "high") == 1


def test_the_finding_id_ignores_the_line_but_not_the_file_or_commit() -> None:
    def unlisted(line: int, path: str = "/r/a.env", commit: str | None = None) -> str:
        found = judged(
            entry("k", "campaigns"),
            FULL_ACCESS,
            (dataclasses.replace(hit(path, listed=False, line=line), commit=commit),),
        )
        return next(f.finding_id for f in found.findings if f.rule_id == "CLA003")

    assert unlisted(3) == unlisted(40)
    assert unlisted(3) != unlisted(3, "/r/b.env")
    assert unlisted(3, commit="a" * 40) != unlisted(3) != unlisted(3, commit="b" * 40)


def test_two_entries_holding_one_key_get_a_finding_id_each() -> None:
    """The same key under two inventory names, found in one file: two findings to accept or
    fix, so a baseline entry for one must not silence the other."""

    def unlisted(name: str) -> str:
        found = judged(entry(name, "campaigns"), FULL_ACCESS, (hit("/r/a.env", listed=False),))
        return next(f.finding_id for f in found.findings if f.rule_id == "CLA003")

    assert unlisted("web-widget") != unlisted("nightly-sync")
    assert unlisted("web-widget") == unlisted("web-widget")


def test_sarif_with_a_baseline_and_git_hits_is_valid() -> None:
    commit = "0f" * 20
    git_hit = dataclasses.replace(hit("/repo/old/.env", listed=False, line=2), commit=commit)
    audited = report(judged(entry("k", "campaigns"), FULL_ACCESS, (git_hit,)), *sample().keys)
    first = next(f for f in audited.findings if f.rule_id == "CLA003")
    doc = to_sarif(apply_baseline(audited, frozenset({first.finding_id}), Path("b.json")))
    validate(doc)
    results = doc["runs"][0]["results"]
    assert [r["baselineState"] for r in results].count("unchanged") == 1
    assert {r["baselineState"] for r in results} == {"new", "unchanged"}
    git_result = next(r for r in results if r["baselineState"] == "unchanged")
    location = git_result["locations"][0]
    assert location["properties"] == {"commit": commit}
    assert git_result["partialFingerprints"]["findingId/v1"] == first.finding_id
    assert doc["runs"][0]["properties"]["findingsBaselined"] == 1
    assert "baselineState" not in to_sarif(sample())["runs"][0]["results"][0]


def test_odd_file_names_reach_sarif_and_json_without_crashing(tmp_path: Path) -> None:
    odd = "/repo/[link=x]y\x1b[2J/bad\udcffname.env"
    judgement = judged(entry("k", "campaigns"), FULL_ACCESS, (hit(odd, listed=False),))
    audited = report(judgement, roots=("/repo",))
    doc = to_sarif(audited)
    validate(doc)
    uri = doc["runs"][0]["results"][-1]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri == {"uri": "%5Blink%3Dx%5Dy%1B%5B2J/bad%FFname.env", "uriBaseId": "%SRCROOT%"}
    out = tmp_path / "a.json"
    out.write_text(to_json(audited), encoding="utf-8", errors="backslashreplace")
    assert json.loads(out.read_text())["keys"][0]["places_found"] == [odd]
    assert to_json(audited, ascii_only=True).isascii()
