"""What the key-exposure audit writes (pipelines/audit): one row per key per audit run."""

from __future__ import annotations

from pipelines.warehouse.table import Column, Table, columns


def _lists(subject: str, **docs: str) -> tuple[Column, ...]:
    """One list of ``subject`` per way they were sorted (``endpoints_`` by the probe's outcome,
    ``places_`` by who named them), in the order given; always present, empty when none."""
    return columns("VARCHAR[]", True, **{f"{subject}_{way}": doc for way, doc in docs.items()})


# Both tables say when the audit ran and which key, in the same words: declared once.
_AUDITED_AT = Column("audited_at", "TIMESTAMPTZ", "When the audit ran (UTC).", True)
_KEY = (
    Column("key_name", "VARCHAR", "Name of the key in the inventory.", True),
    Column("fingerprint", "VARCHAR", "HMAC-SHA256 id of the key (16 hex); null if unreadable."),
    Column(
        "last4", "VARCHAR", "Last 4 characters of the key; empty for keys under 12 chars.", True
    ),
)

KEY_AUDIT = Table(
    "key_audit",
    "Key-exposure audits: one row per inventoried key per audit run, history kept. Keys appear "
    "only as fingerprints (HMAC-SHA256 with this installation's secret) and last 4 characters.",
    (
        Column(
            "run_id",
            "VARCHAR",
            "Id of the audit run (the Dagster run id when run as an asset).",
            True,
        ),
        _AUDITED_AT,
        *_KEY,
        *columns(
            "VARCHAR",
            True,
            status="active, rejected (every endpoint 401) or unknown.",
            intended_scope="Scope from the inventory: campaigns, billing, full.",
        ),
        *_lists(
            "endpoints",
            readable="Endpoints that answered 2xx with JSON.",
            forbidden="Endpoints that answered 403 (outside scope).",
            rejected="Endpoints that answered 401.",
            unknown="Endpoints with no usable answer (timeout, 429...).",
        ),
        *columns(
            "BOOLEAN",
            True,
            billing_exposed="Reads billing data beyond its intended scope.",
            client_side_or_public=(
                "A listed use is client-side or public, or the scan found the key in a file a "
                "browser is served (.js, .html, .map, or under static/, public/, dist/, build/)."
            ),
        ),
        Column("severity", "VARCHAR", "Highest finding: none, low, medium, high, critical.", True),
        Column("findings", "INTEGER", "Number of findings about the key.", True),
        *_lists(
            "places",
            listed="Places the inventory lists for the key.",
            found="Files where the scan found the key.",
        ),
    ),
    since=2,
)


KEY_AUDIT_FINDINGS = Table(
    "key_audit_findings",
    "Findings of key-exposure audits: one row per finding and location (a finding without a "
    "location has one row with no location), history kept. Keys appear only as fingerprints "
    "and last 4 characters; the matching text of a scan hit is never stored.",
    (
        Column("run_id", "VARCHAR", "Id of the audit run (joins key_audit.run_id).", True),
        _AUDITED_AT,
        Column(
            "finding_id",
            "VARCHAR",
            "Stable id of the finding across runs: sha256 of rule, inventory entry name, key "
            "fingerprint and places or paths (with commit), not the line. What --baseline "
            "files record.",
            True,
        ),
        *_KEY,
        *columns(
            "VARCHAR",
            True,
            key_status="The key's status: active, rejected or unknown.",
            severity="The finding's severity: low, medium, high, critical.",
            rule_id="Rule id (CLA001...CLA008, docs/audit.md).",
            rule_name="Rule name, such as billing-beyond-scope.",
            message="What was found and what to do, for this key.",
            remedy="What to do about findings of this rule.",
        ),
        Column(
            "billing_readable",
            "VARCHAR[]",
            "Billing endpoints the key read (2xx with JSON) in this run: what was proved.",
            True,
        ),
        *columns(
            "BOOLEAN",
            True,
            baselined="Recorded in the --baseline file given to the run.",
            counted="Counts toward the severity totals and the exit code (not baselined).",
        ),
        # Where: a file position (commit for a git-history hit) or an inventory place.
        Column("path", "VARCHAR", "File where the key was found; null for an inventory place."),
        *columns(
            "INTEGER",
            line="Line of the hit in the file (1-based).",
            column_number="Column of the hit in the line (1-based).",
        ),
        *columns(
            "VARCHAR",
            encoding="Form of the hit: plain, url, base64, base64url.",
            commit="Commit of a git-history hit; null for a working-tree file.",
            place="Place from the inventory entry; null for a scan hit.",
            place_kind="Kind of that place: server, client-side, public, vendor, repository.",
        ),
    ),
    since=5,
)
