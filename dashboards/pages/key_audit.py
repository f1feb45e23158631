"""The latest audit of each API key: fingerprints and last four characters, never a key."""

from __future__ import annotations

from dashboards import paths
from dashboards.markup import para
from dashboards.model import KeyAudit
from dashboards.pages.common import SITE_CRUMBS, File, page_file, when
from dashboards.tables import Column, number_cell, table, text_cell


def key_audit_file(audits: list[KeyAudit]) -> File:
    path = paths.KEY_AUDIT
    exposed = [a for a in audits if a.billing_exposed or a.client_side_or_public]
    summary = (
        para(
            f"{len(exposed)} key(s) expose billing data or are used client-side or in public.",
            "warn",
        )
        if exposed
        else para("No key exposes billing data beyond its scope.", "ok")
    )
    body = [
        para(
            "Keys appear as fingerprints (HMAC-SHA256 with this installation's secret) and "
            "their last 4 characters only; the latest audit of each key is shown. Keys belong "
            "to the installation, not to one account: this page covers every account."
        ),
        summary,
        table(
            "Latest audit per key",
            [
                Column("Key"),
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
                    text_cell(a.key_name),
                    text_cell(a.fingerprint or "unreadable"),
                    text_cell(a.last4 or "—"),
                    text_cell(a.status),
                    text_cell(a.intended_scope),
                    text_cell(a.severity),
                    text_cell("exposed" if a.billing_exposed else "no"),
                    text_cell("yes" if a.client_side_or_public else "no"),
                    number_cell(a.findings),
                    text_cell(when(a.audited_at)),
                ]
                for a in audits
            ],
        ),
    ]
    return page_file(path, "API key audit", body, account=None, crumbs=SITE_CRUMBS, sortable=True)
