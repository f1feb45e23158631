"""The latest audit of each API key, and every finding of it: fingerprints and last four
characters, never a key.

The banner counts findings per severity the way the audit's exit code does: it sums the
``counted`` flag the audit stored with each finding (not baselined), so the page and a CI gate
can never disagree. A rejected key reads nothing, so it is never counted as exposing billing.
An active key that is client-side or public (the audit's own judgement, stored per key) never
gets the "no key reads beyond its scope" line: anyone can use it.
"""

from __future__ import annotations

from dashboards import paths
from dashboards.markup import Html, para
from dashboards.model import KeyAudit, KeyAuditFinding, KeyAuditPlace
from dashboards.pages.common import SITE_CRUMBS, Downloads, File, page_file, when
from dashboards.tables import Column, dash_cell, number_cell, text_cell
from pipelines.runtime.visible_text import location_text, visible
from pipelines.warehouse.severity import Severity

# Worst first, as the audit ranks them; "none" is no finding.
SEVERITIES = tuple(s.value for s in sorted(Severity, reverse=True) if s is not Severity.NONE)


def key_audit_file(audits: list[KeyAudit]) -> list[File]:
    path = paths.KEY_AUDIT
    downloads = Downloads(path)
    findings = [f for a in audits for f in a.finding_list]
    body = [
        para(
            "Keys appear as fingerprints (HMAC-SHA256 with this installation's secret) and "
            "their last 4 characters only; the latest audit of each key is shown. Keys belong "
            "to the installation, not to one account: this page covers every account."
        ),
        *summary(audits, findings),
        downloads.table(
            "key-audit-keys.csv",
            "Latest audit per key",
            [
                Column("Key", breakable=True),
                Column("Fingerprint"),
                Column("Last 4"),
                Column("Status"),
                Column("Intended scope"),
                Column("Severity"),
                Column("Billing exposure"),
                Column("Client-side or public"),
                Column("Findings", numeric=True),
                Column("Audited at"),
            ],
            [
                [
                    text_cell(visible(a.key_name)),
                    text_cell(a.fingerprint or "unreadable"),
                    text_cell(a.last4) if a.last4 else dash_cell(),
                    text_cell(a.status),
                    text_cell(a.intended_scope),
                    text_cell(a.severity),
                    text_cell("exposed" if exposes_billing(a) else "no"),
                    text_cell("yes" if a.client_side_or_public else "no"),
                    number_cell(a.findings),
                    text_cell(when(a.audited_at)),
                ]
                for a in audits
            ],
        ),
        downloads.table(
            "key-audit-findings.csv",
            "Findings of the latest audit per key",
            [
                Column("Severity"),
                Column("Rule"),
                Column("Key", breakable=True),
                Column("Fingerprint"),
                Column("Last 4"),
                Column("Proved"),
                Column("Where", breakable=True),
                Column("What to do"),
                Column("Finding", breakable=True),
                Column("State"),
            ],
            [finding_row(f) for f in findings],
            empty="No finding in the latest audit of any key.",
        ),
    ]
    page = page_file(path, "API key audit", body, account=None, crumbs=SITE_CRUMBS, sortable=True)
    return [page, *downloads.files]


def exposes_billing(audit: KeyAudit) -> bool:
    """Reads billing data beyond its scope. Only an active key can: the audit records an
    exposure only for billing endpoints that answered with data, which makes a key active, so
    a rejected key never has one."""
    return audit.billing_exposed


def severity_counts(findings: list[KeyAuditFinding]) -> dict[str, int]:
    """Counted findings per severity: the stored ``counted`` flag is the audit's own
    ``Finding.counted``, which its exit code uses."""
    counts = dict.fromkeys(SEVERITIES, 0)
    for finding in findings:
        if finding.counted and finding.severity in counts:
            counts[finding.severity] += 1
    return counts


def summary(audits: list[KeyAudit], findings: list[KeyAuditFinding]) -> list[Html]:
    counts = severity_counts(findings)
    baselined = sum(1 for f in findings if f.baselined)
    exposed = [a for a in audits if exposes_billing(a)]
    public = [a for a in audits if a.status == "active" and a.client_side_or_public]
    out: list[Html] = []
    total = sum(counts.values())
    parts = ", ".join(f"{counts[s]} {s}" for s in SEVERITIES)
    accepted = f" ({baselined} more baselined)" if baselined else ""
    if total:
        out.append(para(f"{total} open finding(s): {parts}{accepted}.", "warn"))
    else:
        out.append(para(f"No open finding{accepted}.", "ok"))
    if exposed:
        out.append(para(f"{len(exposed)} key(s) read billing data beyond their scope.", "warn"))
    elif not public:
        # A key anyone can copy reads what it reads for anyone: "within its scope" would
        # reassure where the audit found a leak.
        out.append(para("No key reads billing data beyond its scope.", "ok"))
    if public:
        out.append(
            para(
                f"{len(public)} active key(s) used client-side or in public (a listed place, or "
                "a file a browser is served): anyone who copies one reads what it reads.",
                "warn",
            )
        )
    missing = [a.key_name for a in audits if not a.findings_recorded]
    if missing:
        out.append(
            para(
                f"The findings of {len(missing)} key(s) were not recorded (audited before "
                "findings were stored): run `creditlens audit` again with a warehouse "
                "configured to list them.",
                "warn",
            )
        )
    return out


def finding_row(finding: KeyAuditFinding) -> list:
    if finding.billing_readable:
        proved = "billing endpoints answered with data: " + ", ".join(finding.billing_readable)
    elif finding.key_status == "rejected":
        proved = "rejected: every endpoint answered 401"
    elif finding.fingerprint is None:
        proved = "not probed: the key could not be read"
    else:
        proved = "no billing endpoint answered with data"
    where = "; ".join(place_text(p) for p in finding.places) or "—"
    return [
        text_cell(finding.severity),
        text_cell(f"{finding.rule_id} {finding.rule_name}"),
        text_cell(visible(finding.key_name)),
        text_cell(finding.fingerprint or "unreadable"),
        text_cell(finding.last4) if finding.last4 else dash_cell(),
        text_cell(proved),
        text_cell(where),
        text_cell(visible(finding.remedy)),
        text_cell(visible(finding.message)),
        text_cell("baselined" if finding.baselined else "new"),
    ]


def place_text(place: KeyAuditPlace) -> str:
    """Where the finding is, as the terminal report says it (pipelines.runtime.visible_text)."""
    return location_text(place)
