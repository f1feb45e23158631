"""The report as SARIF 2.1.0, for code-scanning dashboards and CI annotations.

Every result carries the key's fingerprint in ``partialFingerprints``, so a dashboard
tracks one finding about one key across runs without ever being shown the key.

File locations are relative to the scanned root that holds them: ``uriBaseId`` names the root
(``%SRCROOT%`` for the first, ``%SRCROOT2%``... for the others) and ``originalUriBaseIds``
describes each, without its absolute path. A log is then the same on every checkout and shows
no folder of the machine that ran it; code scanning resolves ``%SRCROOT%`` to the checkout.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pipelines.audit.report import AuditReport, Finding, Location
from pipelines.audit.roots import below_root
from pipelines.audit.rules import RULES
from pipelines.runtime.visible_text import visible
from pipelines.warehouse.severity import Severity

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
TOOL_NAME = "creditlens-audit"
_LEVEL = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
    Severity.NONE: "none",
}
# GitHub code scanning ranks security results by this number (as a string).
_SECURITY_SEVERITY = {
    Severity.CRITICAL: "9.5",
    Severity.HIGH: "8.0",
    Severity.MEDIUM: "5.5",
    Severity.LOW: "2.0",
    Severity.NONE: "0.0",
}


def level(severity: Severity) -> str:
    return _LEVEL[severity]


def base_id(index: int) -> str:
    """The uriBaseId of the ``index``-th scanned root (0-based)."""
    return "%SRCROOT%" if index == 0 else f"%SRCROOT{index + 1}%"


def to_sarif(report: AuditReport) -> dict[str, Any]:
    rule_index = {rule.id: i for i, rule in enumerate(RULES)}
    roots = report.scan.roots
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": _driver()},
                "automationDetails": {"id": f"creditlens-key-audit/{report.run_id}"},
                **({"originalUriBaseIds": _base_ids(roots)} if roots else {}),
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "endTimeUtc": report.audited_at.isoformat().replace("+00:00", "Z"),
                    }
                ],
                "results": [
                    _result(f, rule_index[f.rule_id], report.baseline is not None, roots)
                    for f in report.findings
                ],
                "properties": {
                    "inventory": report.inventory,
                    "keysAudited": len(report.keys),
                    "filesScanned": report.scan.files_scanned,
                    "commitsScanned": report.scan.commits_scanned,
                    "scanHitsSuppressed": report.suppressed_hits,
                    "findingsBaselined": report.baselined,
                    **({"baseline": report.baseline} if report.baseline else {}),
                },
            }
        ],
    }


def _driver() -> dict[str, Any]:
    return {
        "name": TOOL_NAME,
        "version": _version(),
        "rules": [
            {
                "id": rule.id,
                "name": rule.name,
                "shortDescription": {"text": rule.short},
                "fullDescription": {"text": rule.full},
                "help": {"text": rule.help},
                "defaultConfiguration": {"level": level(rule.default)},
                "properties": {
                    "tags": ["security", "secrets"],
                    "security-severity": _SECURITY_SEVERITY[rule.default],
                },
            }
            for rule in RULES
        ],
    }


def _base_ids(roots: tuple[str, ...]) -> dict[str, Any]:
    """Each scanned root described by its last folder name only: its absolute path would
    tie the log to one machine (and show that machine's folders)."""
    return {
        base_id(i): {
            "description": {"text": f"scanned root {i + 1}: {visible(Path(root).name or root)}"}
        }
        for i, root in enumerate(roots)
    }


def _result(
    finding: Finding, index: int, compared: bool, roots: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One result; ``compared`` when the run had a baseline, which gives ``baselineState``:
    ``unchanged`` for a finding the baseline records, ``new`` for any other."""
    result: dict[str, Any] = {
        "ruleId": finding.rule_id,
        "ruleIndex": index,
        "level": level(finding.severity),
        "message": {"text": finding.message},
        "partialFingerprints": _fingerprints(finding),
        "properties": {
            "severity": finding.severity.value,
            "security-severity": _SECURITY_SEVERITY[finding.severity],
            "keyName": finding.key_name,
            "keyFingerprint": finding.fingerprint,
            "keyLast4": finding.last4,
            "findingId": finding.finding_id,
            "baselined": finding.baselined,
        },
    }
    if compared:
        result["baselineState"] = "unchanged" if finding.baselined else "new"
    locations = [_location(loc, roots) for loc in finding.locations]
    if locations:
        result["locations"] = locations
    return result


def _fingerprints(finding: Finding) -> dict[str, str]:
    where = "|".join(f"{loc.path or loc.place}:{loc.line or ''}" for loc in finding.locations)
    identity = f"{finding.rule_id}|{finding.key_name}|{finding.fingerprint}|{where}"
    digest = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    # findingId/v1 ignores line numbers (what --baseline matches); findingHash/v1 does not.
    out = {"findingHash/v1": digest, "findingId/v1": finding.finding_id}
    if finding.fingerprint:
        out["keyFingerprint/v1"] = finding.fingerprint
    return out


def _location(loc: Location, roots: tuple[str, ...] = ()) -> dict[str, Any]:
    if loc.path is not None:
        physical: dict[str, Any] = {"artifactLocation": _artifact(loc.path, roots)}
        if loc.line is not None:
            region: dict[str, Any] = {"startLine": loc.line}
            if loc.column is not None:
                region["startColumn"] = loc.column
            physical["region"] = region
        out: dict[str, Any] = {"physicalLocation": physical}
        if loc.encoding:
            where = f" in commit {loc.commit}" if loc.commit else ""
            out["message"] = {"text": f"key found {_encoding_text(loc.encoding)}{where}"}
        if loc.commit:
            out["properties"] = {"commit": loc.commit}
        return out
    return {
        "logicalLocations": [{"name": loc.place or "", "kind": f"place:{loc.kind or 'unknown'}"}],
        "message": {"text": f"listed use: {loc.place} ({loc.kind})"},
    }


def _artifact(path: str, roots: tuple[str, ...]) -> dict[str, Any]:
    found = below_root(path, roots)
    if found is None:  # not under a scanned root (a report built without its scan)
        return {"uri": _uri(path)}
    index, inside = found
    return {"uri": _quote(inside), "uriBaseId": base_id(index)}


def _uri(path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return _quote(p.relative_to(Path.cwd()).as_posix())
        except ValueError:
            return "file://" + _quote(p.as_posix())
    return _quote(p.as_posix())


def _quote(path: str) -> str:
    """Percent-encode a path; a name that is not UTF-8 (surrogate-escaped by Python) keeps its
    original bytes instead of failing, and control characters are escaped like any other."""
    return quote(path, safe="/", errors="surrogateescape")


def _encoding_text(encoding: str) -> str:
    return "in clear" if encoding == "plain" else f"{encoding}-encoded"


def _version() -> str:
    try:
        return metadata.version("creditlens")
    except metadata.PackageNotFoundError:
        return "0.0.0"
