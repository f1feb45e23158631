"""From what the API answered and where the key was found, to findings a person can act on.

Pure: no I/O, so every classification is tested from outcomes alone. Severity rises when
billing data is readable beyond the intended scope, and again when anyone can copy the key
(a client-side or public place listed in the inventory, or a file a browser is served where the
scan found it: ``rules.served_to_browser``, the one definition every output follows).
"""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.audit import rules
from pipelines.audit.endpoints import BY_NAME, Outcome
from pipelines.audit.inventory import BILLING, KeyEntry
from pipelines.audit.report import (
    EndpointResult,
    Finding,
    KeyResult,
    KeyStatus,
    Location,
    ScanHit,
    ScanStats,
)
from pipelines.audit.roots import inside_path
from pipelines.warehouse.severity import Severity, highest


def key_status(results: Sequence[EndpointResult]) -> KeyStatus:
    """Active if anything is readable; rejected only if every endpoint said 401."""
    outcomes = [r.outcome for r in results]
    if Outcome.READABLE in outcomes:
        return KeyStatus.ACTIVE
    if outcomes and all(o is Outcome.REJECTED for o in outcomes):
        return KeyStatus.REJECTED
    return KeyStatus.UNKNOWN


def assess(
    entry: KeyEntry,
    *,
    fingerprint: str | None,
    last4: str,
    base_url: str,
    endpoints: Sequence[EndpointResult],
    hits: Sequence[ScanHit] = (),
    unavailable: str | None = None,
    scan: ScanStats | None = None,
) -> KeyResult:
    """Judge one key. ``scan`` is the statistics of the scan(s) that looked for it, if any:
    a key the scan skipped as too short, or a scan that could not read everything, is a
    finding too, because "no copy found" would otherwise read as "no copy exists".
    """
    status = KeyStatus.UNKNOWN if unavailable else key_status(endpoints)
    readable = [r.endpoint for r in endpoints if r.outcome is Outcome.READABLE]
    billing_readable = tuple(n for n in readable if BY_NAME[n].is_billing)
    beyond = () if BILLING in entry.intended else billing_readable
    roots = scan.roots if scan is not None else ()
    served = tuple(
        h for h in hits if not h.suppressed and rules.served_to_browser(inside_path(h.path, roots))
    )
    ctx = _Context(entry, fingerprint, last4, served)
    findings: list[Finding] = []
    if unavailable:
        findings.append(
            ctx.finding(rules.KEY_UNAVAILABLE, Severity.LOW, _unavailable(entry, unavailable))
        )
    elif status is KeyStatus.REJECTED:
        findings.append(
            ctx.finding(rules.KEY_REJECTED, Severity.LOW, _rejected(entry), ctx.places())
        )
    else:
        findings.extend(_exposure_findings(ctx, status, billing_readable, beyond, endpoints))
    findings.extend(_unlisted_findings(ctx, status, billing_readable, hits))
    if scan is not None and not unavailable:
        findings.extend(_scan_findings(ctx, status, scan))
    return KeyResult(
        name=entry.name,
        fingerprint=fingerprint,
        last4=last4,
        status=status,
        intended_scope=entry.scope,
        base_url=base_url,
        endpoints=tuple(endpoints),
        billing_readable=billing_readable,
        exposure=beyond,
        client_side_or_public=ctx.public,
        places_listed=tuple(p.place for p in entry.places),
        places_found=tuple(dict.fromkeys(h.path for h in hits)),
        severity=highest([f.severity for f in findings]),
        findings=tuple(findings),
        note=unavailable or "",
    )


class _Context:
    def __init__(
        self, entry: KeyEntry, fingerprint: str | None, last4: str, served: tuple[ScanHit, ...]
    ) -> None:
        self.entry = entry
        self.fingerprint = fingerprint
        self.last4 = last4
        self.served = served  # copies the scan found in files a browser is served

    @property
    def public(self) -> bool:
        """Anyone can copy the key: a listed client-side or public place, or a served file."""
        return bool(self.entry.flagged_places or self.served)

    @property
    def who(self) -> str:
        ident = self.fingerprint or "not fingerprinted"
        tail = f", ...{self.last4}" if self.last4 else ""
        return f"key {self.entry.name!r} ({ident}{tail})"

    def places(self, flagged_only: bool = False) -> tuple[Location, ...]:
        chosen = self.entry.flagged_places if flagged_only else self.entry.places
        return tuple(Location(place=p.place, kind=p.kind) for p in chosen)

    def public_places(self) -> tuple[Location, ...]:
        """The listed client-side or public places, then each served copy the scan found."""
        copies = tuple(
            Location(
                path=h.path, line=h.line, column=h.column, encoding=h.encoding, commit=h.commit
            )
            for h in self.served
        )
        return self.places(flagged_only=True) + copies

    def finding(
        self,
        rule: rules.Rule,
        severity: Severity,
        message: str,
        locations: tuple[Location, ...] = (),
    ) -> Finding:
        return Finding(
            rule_id=rule.id,
            severity=severity,
            key_name=self.entry.name,
            fingerprint=self.fingerprint,
            last4=self.last4,
            message=f"{self.who}: {message}",
            locations=locations,
        )


def _exposure_findings(
    ctx: _Context,
    status: KeyStatus,
    billing_readable: tuple[str, ...],
    beyond: tuple[str, ...],
    endpoints: Sequence[EndpointResult],
) -> list[Finding]:
    entry = ctx.entry
    flagged = ctx.public
    out: list[Finding] = []
    if beyond:
        severity = Severity.CRITICAL if flagged else Severity.HIGH
        out.append(
            ctx.finding(
                rules.BILLING_BEYOND_SCOPE,
                severity,
                f"meant for {entry.scope_label} but reads {_data(beyond)}. Rotate it and issue "
                f"a key restricted to campaigns, then replace it in {_names(entry.places)}.",
                ctx.places(),
            )
        )
    if status is KeyStatus.ACTIVE and flagged:
        severity = Severity.CRITICAL if billing_readable else Severity.MEDIUM
        reads = _data(billing_readable) if billing_readable else "the campaigns"
        out.append(
            ctx.finding(
                rules.CLIENT_SIDE_OR_PUBLIC,
                severity,
                f"{_public_where(ctx)}, where anyone can copy it and read {reads}. Treat it as "
                "leaked: rotate it, remove it from there and call the API from a server.",
                ctx.public_places(),
            )
        )
    unknown = [r for r in endpoints if r.outcome is Outcome.UNKNOWN]
    if unknown:
        # A restricted key used in public might still read billing we could not check.
        severity = Severity.MEDIUM if flagged else Severity.LOW
        reasons = "; ".join(f"{r.endpoint}: {r.reason or 'no answer'}" for r in unknown)
        verdict = "its status" if status is KeyStatus.UNKNOWN else "what it can read"
        out.append(
            ctx.finding(
                rules.PROBE_INCOMPLETE,
                severity,
                f"could not determine {verdict} ({reasons}). Rerun the audit; if this "
                "persists, check the base URL and the API's health.",
                ctx.places(),
            )
        )
    return out


def _unlisted_findings(
    ctx: _Context,
    status: KeyStatus,
    billing_readable: tuple[str, ...],
    hits: Sequence[ScanHit],
) -> list[Finding]:
    if status is KeyStatus.ACTIVE:
        severity = Severity.HIGH if billing_readable else Severity.MEDIUM
        state = "an active key" + (
            f" that reads {_data(billing_readable)}" if billing_readable else ""
        )
        action = "Remove it from there and rotate it if the file was ever shared or committed"
    elif status is KeyStatus.REJECTED:
        severity = Severity.LOW
        state = "a rejected (revoked or invalid) key"
        action = "Remove it from there"
    else:
        severity = Severity.MEDIUM
        state = "a key whose status is unknown"
        action = "Remove it from there and rotate it if the file was ever shared"
    # A hit on a line marked creditlens:allow is accepted by whoever wrote the marker.
    by_file: dict[tuple[str, str | None], list[ScanHit]] = {}
    for hit in hits:
        if not hit.listed and not hit.suppressed:
            by_file.setdefault((hit.path, hit.commit), []).append(hit)
    out = []
    for (path, commit), file_hits in by_file.items():
        lines = ", ".join(str(h.line) for h in file_hits)
        encodings = ", ".join(sorted({h.encoding for h in file_hits}))
        where = f"{path} in git commit {commit[:12]}" if commit else path
        history = (
            " It is in the repository's history: rewriting the history does not unshare it, "
            "so rotate it."
            if commit
            else ""
        )
        out.append(
            ctx.finding(
                rules.UNLISTED_PLACE,
                severity,
                f"{state}, found in {where} (line {lines}; {encodings}), a place its inventory "
                f"entry does not list. {action}; if the use is legitimate, add the place to "
                f"the inventory.{history}",
                tuple(
                    Location(
                        path=h.path,
                        line=h.line,
                        column=h.column,
                        encoding=h.encoding,
                        commit=h.commit,
                    )
                    for h in file_hits
                ),
            )
        )
    return out


def _scan_findings(ctx: _Context, status: KeyStatus, scan: ScanStats) -> list[Finding]:
    if ctx.entry.name in scan.short_keys:
        return [
            ctx.finding(
                rules.KEY_NOT_SCANNED,
                Severity.LOW if status is KeyStatus.REJECTED else Severity.MEDIUM,
                f"not searched for in the scanned files: it is shorter than "
                f"{scan.min_key_chars} characters, and a key that short matches inside "
                "unrelated words, so its copies cannot be told from noise (it is also easy "
                "to guess). Rotate it to a full-length key, replace it where it is used and "
                "rerun the audit.",
            )
        ]
    files, folders = scan.skipped_unreadable, scan.skipped_unreadable_dirs
    if not files and not folders:
        return []
    listed = [*scan.unreadable_dirs, *scan.unreadable_files]
    counts = " and ".join(
        f"{n} {noun}{'s' if n != 1 else ''}"
        for n, noun in ((files, "file"), (folders, "folder"))
        if n
    )
    shown = ", ".join(listed[:3]) + (", ..." if len(listed) > 3 or files + folders > 3 else "")
    return [
        ctx.finding(
            rules.SCAN_INCOMPLETE,
            Severity.MEDIUM,
            f"the scan could not read {counts} ({shown}), so copies of the key there are not "
            "ruled out. Give the audit read access to them (or leave them out of the scan) "
            "and rerun it.",
            tuple(Location(path=p) for p in listed),
        )
    ]


def _public_where(ctx: _Context) -> str:
    listed = ctx.entry.flagged_places
    parts = []
    if listed:
        parts.append(f"used in {_names(listed)} ({'/'.join(sorted({p.kind for p in listed}))})")
    if ctx.served:
        files = list(dict.fromkeys(h.path for h in ctx.served))
        shown = ", ".join(repr(f) for f in files[:3]) + (", ..." if len(files) > 3 else "")
        parts.append(f"found in {len(files)} file(s) a browser is served ({shown})")
    return " and ".join(parts)


def _rejected(entry: KeyEntry) -> str:
    where = f" from {_names(entry.places)}" if entry.places else ""
    return (
        "every endpoint answered 401: the key is revoked or invalid. Remove it"
        f"{where} and from the inventory, or replace it with a valid key."
    )


def _unavailable(entry: KeyEntry, reason: str) -> str:
    return (
        f"cannot read the key from {entry.source} ({reason}), so it was neither probed nor "
        "searched for. Make it readable where the audit runs, or remove the entry."
    )


def _data(endpoint_names: Sequence[str]) -> str:
    items = [BY_NAME[n].data for n in endpoint_names]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _names(places: Sequence[object]) -> str:
    names = [getattr(p, "place", str(p)) for p in places]
    return ", ".join(repr(n) for n in names) if names else "every place that uses it"
