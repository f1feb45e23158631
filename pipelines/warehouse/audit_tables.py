"""What the key-exposure audit writes (pipelines/audit): one row per key per audit run."""

from __future__ import annotations

from pipelines.warehouse.table import Column, Table


def _lists(subject: str, **docs: str) -> tuple[Column, ...]:
    """One list of ``subject`` per way they were sorted (``endpoints_`` by the probe's outcome,
    ``places_`` by who named them), in the order given; always present, empty when none."""
    return tuple(Column(f"{subject}_{way}", "VARCHAR[]", doc, True) for way, doc in docs.items())


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
        Column("audited_at", "TIMESTAMPTZ", "When the audit ran (UTC).", True),
        Column("key_name", "VARCHAR", "Name of the key in the inventory.", True),
        Column("fingerprint", "VARCHAR", "HMAC-SHA256 id of the key (16 hex); null if unreadable."),
        Column(
            "last4", "VARCHAR", "Last 4 characters of the key; empty for keys under 12 chars.", True
        ),
        Column("status", "VARCHAR", "active, rejected (every endpoint 401) or unknown.", True),
        Column(
            "intended_scope", "VARCHAR", "Scope from the inventory: campaigns, billing, full.", True
        ),
        *_lists(
            "endpoints",
            readable="Endpoints that answered 2xx with JSON.",
            forbidden="Endpoints that answered 403 (outside scope).",
            rejected="Endpoints that answered 401.",
            unknown="Endpoints with no usable answer (timeout, 429...).",
        ),
        Column("billing_exposed", "BOOLEAN", "Reads billing data beyond its intended scope.", True),
        Column("client_side_or_public", "BOOLEAN", "A listed use is client-side or public.", True),
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
