"""What an audit found, in shapes that hold fingerprints and never keys.

Nothing here can hold a key: results are built from fingerprints, last-4s, names and
scrubbed texts, so serializing a report (JSON, SARIF, table rows) cannot leak one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

from pipelines.audit.endpoints import Outcome
from pipelines.audit.rules import BY_ID
from pipelines.warehouse.severity import Severity, highest


class KeyStatus(Enum):
    ACTIVE = "active"  # at least one endpoint readable
    REJECTED = "rejected"  # every endpoint 401
    UNKNOWN = "unknown"  # neither, or the key could not be read


@dataclass(frozen=True)
class EndpointResult:
    endpoint: str
    path: str
    outcome: Outcome
    http_status: int | None = None  # of an error answer; None for 2xx and no answer
    reason: str = ""


@dataclass(frozen=True)
class Location:
    """A place from the inventory (place, kind) or a file position from the scan."""

    place: str | None = None
    kind: str | None = None
    path: str | None = None
    line: int | None = None
    column: int | None = None
    encoding: str | None = None
    commit: str | None = None  # the commit a git-history hit was found in

    @property
    def where(self) -> str:
        """The identity of the place, without the line: see ``finding_id``."""
        if self.path is not None:
            return f"path:{self.path}" + (f"@{self.commit}" if self.commit else "")
        return f"place:{self.place or ''}"


@dataclass(frozen=True)
class Finding:
    rule_id: str
    severity: Severity
    key_name: str
    fingerprint: str | None
    last4: str
    message: str
    locations: tuple[Location, ...] = ()
    # Recorded in the --baseline file: shown, counted apart, never fails the run.
    baselined: bool = False

    @property
    def finding_id(self) -> str:
        """A stable id of this finding, for baselines and dashboards.

        sha256 of the rule, the inventory entry's name, the key's fingerprint and the distinct
        places or paths (with the commit of git-history hits), never the key and never the line
        number: an edit above the line must not turn an accepted finding into a new one. The
        entry's name is part of it because two entries may hold the same key, and each has its
        own finding to accept or fix.
        """
        wheres = sorted({loc.where for loc in self.locations})
        identity = "\n".join(
            ["v1", self.rule_id, f"name:{self.key_name}", self.fingerprint or "", *wheres]
        )
        return hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    @property
    def counted(self) -> bool:
        """Whether the finding counts toward the severity totals and the exit code."""
        return not self.baselined


@dataclass(frozen=True)
class ScanHit:
    key_name: str
    fingerprint: str
    last4: str
    path: str
    line: int
    column: int
    encoding: str  # plain, url, base64, base64url
    listed: bool  # inside a place the key's inventory entry lists
    # On a line marked ``creditlens:allow``: kept so the report shows it, never a finding.
    suppressed: bool = False
    # Set for a hit in git history: the oldest commit (topological order) holding that file
    # version at ``path``, so whoever rotates the key knows where to start rewriting.
    commit: str | None = None


@dataclass(frozen=True)
class ScanStats:
    roots: tuple[str, ...] = ()
    files_scanned: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    skipped_unreadable: int = 0  # files that could not be opened or read
    max_file_bytes: int = 0
    # Never opened: opening a FIFO blocks until a writer comes, and devices never end.
    skipped_special: int = 0
    skipped_symlinks: int = 0
    skipped_unreadable_dirs: int = 0  # folders that could not be listed
    # The unreadable paths themselves (the first 100 of each), so someone can fix access.
    unreadable_files: tuple[str, ...] = ()
    unreadable_dirs: tuple[str, ...] = ()
    # Keys too short to search for without matching unrelated text, and the threshold.
    short_keys: tuple[str, ...] = ()
    min_key_chars: int = 0
    suppressed: int = 0  # hits on lines marked creditlens:allow
    commits_scanned: int = 0  # git history scans only


@dataclass(frozen=True)
class KeyResult:
    name: str
    fingerprint: str | None  # None when the key could not be read
    last4: str
    status: KeyStatus
    intended_scope: tuple[str, ...]
    base_url: str
    endpoints: tuple[EndpointResult, ...]
    billing_readable: tuple[str, ...]  # billing endpoints the key reads
    exposure: tuple[str, ...]  # ... of which beyond its intended scope
    client_side_or_public: bool
    places_listed: tuple[str, ...]
    places_found: tuple[str, ...]  # files where the scan found the key
    severity: Severity
    findings: tuple[Finding, ...]
    note: str = ""

    def endpoints_with(self, outcome: Outcome) -> list[str]:
        return [e.endpoint for e in self.endpoints if e.outcome is outcome]

    @property
    def billing_exposed(self) -> bool:
        return bool(self.exposure)


@dataclass(frozen=True)
class AuditReport:
    run_id: str
    audited_at: datetime
    inventory: str
    keys: tuple[KeyResult, ...]
    scan_hits: tuple[ScanHit, ...] = ()
    scan: ScanStats = field(default_factory=ScanStats)
    baseline: str | None = None  # the --baseline file the findings were compared with

    @property
    def findings(self) -> list[Finding]:
        return [f for k in self.keys for f in k.findings]

    @property
    def suppressed_hits(self) -> int:
        """Copies found but marked as allowed in the file (an allow marker on the line)."""
        return sum(1 for h in self.scan_hits if h.suppressed)

    @property
    def baselined(self) -> int:
        return sum(1 for f in self.findings if f.baselined)

    def key(self, name: str) -> KeyResult | None:
        return next((k for k in self.keys if k.name == name), None)

    @property
    def severity(self) -> Severity:
        return highest([k.severity for k in self.keys])

    def rows(self) -> list[dict[str, Any]]:
        """One row per key for the DuckDB table ``key_audit`` (pipelines/warehouse/schema.py)."""
        return [
            {
                "run_id": self.run_id,
                "audited_at": self.audited_at,
                "key_name": k.name,
                "fingerprint": k.fingerprint,
                "last4": k.last4,
                "status": k.status.value,
                "intended_scope": ",".join(k.intended_scope),
                "endpoints_readable": k.endpoints_with(Outcome.READABLE),
                "endpoints_forbidden": k.endpoints_with(Outcome.FORBIDDEN),
                "endpoints_rejected": k.endpoints_with(Outcome.REJECTED),
                "endpoints_unknown": k.endpoints_with(Outcome.UNKNOWN),
                "billing_exposed": k.billing_exposed,
                "client_side_or_public": k.client_side_or_public,
                "severity": k.severity.value,
                "findings": len(k.findings),
                "places_listed": list(k.places_listed),
                "places_found": list(k.places_found),
            }
            for k in self.keys
        ]

    def finding_rows(self) -> list[dict[str, Any]]:
        """One row per finding and location for ``key_audit_findings`` (a finding without a
        location gets one row with none), so the report page can say where each one is."""
        return finding_rows(self)

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Every table an audit run lands, by name: what a caller appends, table by table."""
        return {"key_audit": self.rows(), "key_audit_findings": self.finding_rows()}


def severity_counts(report: AuditReport) -> dict[str, int]:
    """Findings per severity (low to critical) that count: not baselined.

    The one count: the exit code, the terminal, JSON, the asset's metadata and the stored
    ``counted`` flag the report page sums all come from ``Finding.counted``.
    """
    counts = {s.value: 0 for s in Severity if s is not Severity.NONE}
    for finding in report.findings:
        if finding.counted and finding.severity is not Severity.NONE:
            counts[finding.severity.value] += 1
    return counts


def exit_code(report: AuditReport, fail_on: Severity | str = Severity.HIGH) -> int:
    """1 when a counted finding at or above ``fail_on`` exists (a CI gate), else 0."""
    threshold = fail_on if isinstance(fail_on, Severity) else Severity.parse(fail_on)
    counts = severity_counts(report)
    return int(any(n and Severity(s) >= threshold for s, n in counts.items()))


def finding_rows(report: AuditReport) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for finding in report.findings:
        key = report.key(finding.key_name)
        rule = BY_ID.get(finding.rule_id)
        common = {
            "run_id": report.run_id,
            "audited_at": report.audited_at,
            "finding_id": finding.finding_id,
            "key_name": finding.key_name,
            "fingerprint": finding.fingerprint,
            "last4": finding.last4,
            "key_status": key.status.value if key else KeyStatus.UNKNOWN.value,
            "severity": finding.severity.value,
            "rule_id": finding.rule_id,
            "rule_name": rule.name if rule else finding.rule_id,
            "message": finding.message,
            "remedy": rule.help if rule else "",
            "billing_readable": list(key.billing_readable) if key else [],
            "baselined": finding.baselined,
            "counted": finding.counted,
        }
        for loc in finding.locations or (Location(),):
            rows.append(
                {
                    **common,
                    "path": loc.path,
                    "line": loc.line,
                    "column_number": loc.column,
                    "encoding": loc.encoding,
                    "commit": loc.commit,
                    "place": loc.place,
                    "place_kind": loc.kind,
                }
            )
    return rows


def to_dict(report: AuditReport) -> dict[str, Any]:
    doc = _plain(report)
    doc["severity"] = report.severity.value
    doc["findings_by_severity"] = severity_counts(report)
    doc["findings_baselined"] = report.baselined
    doc["scan_hits_suppressed"] = report.suppressed_hits
    for key, plain_key in zip(report.keys, doc["keys"], strict=True):
        for finding, plain in zip(key.findings, plain_key["findings"], strict=True):
            plain["finding_id"] = finding.finding_id
    return doc


def to_json(report: AuditReport, *, ascii_only: bool = False) -> str:
    """The report as JSON. ``ascii_only`` escapes every non-ASCII character, for a terminal:
    a file name with an escape sequence then cannot drive the terminal that shows it."""
    return json.dumps(to_dict(report), indent=2, ensure_ascii=ascii_only) + "\n"


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, KeyResult):
            out["billing_exposed"] = value.billing_exposed
        return out
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
