"""Small builders for classification tests: outcomes as the probe would record them."""

from __future__ import annotations

from datetime import UTC, datetime

from pipelines.audit.classify import assess
from pipelines.audit.endpoints import ENDPOINTS, Outcome
from pipelines.audit.inventory import KeyEntry, Place
from pipelines.audit.report import AuditReport, EndpointResult, KeyResult, ScanHit, ScanStats

R, F, X, U = Outcome.READABLE, Outcome.FORBIDDEN, Outcome.REJECTED, Outcome.UNKNOWN
FULL_ACCESS = (R, R, R, R, R)
CAMPAIGNS_ONLY = (R, F, F, F, F)
REVOKED = (X, X, X, X, X)


def outcomes(*per_endpoint: Outcome) -> tuple[EndpointResult, ...]:
    assert len(per_endpoint) == len(ENDPOINTS)
    return tuple(
        EndpointResult(
            e.name,
            e.path,
            o,
            {R: None, F: 403, X: 401, U: 429}[o],
            "429 Too Many Requests" if o is U else "",
        )
        for e, o in zip(ENDPOINTS, per_endpoint, strict=True)
    )


def entry(name: str = "k", scope: str = "campaigns", *places: tuple[str, str]) -> KeyEntry:
    return KeyEntry(
        name=name,
        scope=(scope,),
        places=tuple(Place(p, kind) for p, kind in places),
        env="K",
    )


def judged(
    key: KeyEntry, results: tuple[Outcome, ...], hits: tuple[ScanHit, ...] = ()
) -> KeyResult:
    return assess(
        key,
        fingerprint="0123456789abcdef",
        last4="1c3e",
        base_url="http://127.0.0.1:1",
        endpoints=outcomes(*results),
        hits=hits,
    )


def hit(path: str, listed: bool, line: int = 3, encoding: str = "plain") -> ScanHit:
    return ScanHit("k", "0123456789abcdef", "1c3e", path, line, 5, encoding, listed)


def report(*keys: KeyResult, roots: tuple[str, ...] = ()) -> AuditReport:
    """``roots``: the scanned roots its scan statistics name (SARIF is relative to them)."""
    return AuditReport(
        run_id="run-1",
        audited_at=datetime(2026, 11, 21, 12, 0, tzinfo=UTC),
        inventory="keys.toml",
        keys=keys,
        scan_hits=tuple(h for k in keys for h in ()),
        scan=ScanStats(roots=roots),
    )
