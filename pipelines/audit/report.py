"""What an audit found, in shapes that hold fingerprints and never keys.

Nothing here can hold a key: results are built from fingerprints, last-4s, names and
scrubbed texts, so serializing a report (JSON, SARIF, table rows) cannot leak one.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

from pipelines.audit.endpoints import Outcome
from pipelines.audit.severity import Severity, highest


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


@dataclass(frozen=True)
class Finding:
    rule_id: str
    severity: Severity
    key_name: str
    fingerprint: str | None
    last4: str
    message: str
    locations: tuple[Location, ...] = ()


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


@dataclass(frozen=True)
class ScanStats:
    roots: tuple[str, ...] = ()
    files_scanned: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    skipped_unreadable: int = 0
    max_file_bytes: int = 0


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

    @property
    def findings(self) -> list[Finding]:
        return [f for k in self.keys for f in k.findings]

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


def exit_code(report: AuditReport, fail_on: Severity | str = Severity.HIGH) -> int:
    """1 when a finding at or above ``fail_on`` exists (a CI gate), else 0."""
    threshold = fail_on if isinstance(fail_on, Severity) else Severity.parse(fail_on)
    return int(any(f.severity >= threshold for f in report.findings))


def to_dict(report: AuditReport) -> dict[str, Any]:
    doc = _plain(report)
    doc["severity"] = report.severity.value
    counts = {s.value: 0 for s in Severity if s is not Severity.NONE}
    for finding in report.findings:
        if finding.severity is not Severity.NONE:
            counts[finding.severity.value] += 1
    doc["findings_by_severity"] = counts
    return doc


def to_json(report: AuditReport) -> str:
    return json.dumps(to_dict(report), indent=2, ensure_ascii=False) + "\n"


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
