"""Outputs: SARIF valid against the official 2.1.0 schema, JSON, DuckDB rows, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import jsonschema
import pytest

from pipelines.audit.report import exit_code, to_json
from pipelines.audit.sarif import to_sarif
from pipelines.audit.severity import Severity
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
    assert rule_ids == ["CLA001", "CLA002", "CLA003", "CLA004", "CLA005", "CLA006"]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert by_rule["CLA001"]["level"] == "error"  # critical
    assert by_rule["CLA004"]["level"] == "note"  # low
    assert by_rule["CLA005"]["level"] == "note"
    for result in run["results"]:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        assert result["partialFingerprints"]["keyFingerprint/v1"] == "0123456789abcdef"
    physical = by_rule["CLA003"]["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "file:///repo/leak%20with%20space.env"
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
    Warehouse(path).append("key_audit", rows)
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
