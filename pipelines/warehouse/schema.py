"""The warehouse schema: a public interface, versioned, documented in one place.

Analysts query the DuckDB file directly, so names and types here are promises. Each table is
described once (``TABLES``): the DDL, the ``COMMENT ON`` statements and README's data dictionary
are all generated from it. A change is a new migration appended to ``MIGRATIONS``; an older
warehouse upgrades in place, in order, each step in its own transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    doc: str
    not_null: bool = False


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]
    since: int = 1
    kind: str = "table"  # table | view
    view_sql: str = ""
    extra_ddl: tuple[str, ...] = field(default_factory=tuple)

    def create_sql(self) -> str:
        if self.kind == "view":
            return f"CREATE OR REPLACE VIEW {self.name} AS {self.view_sql}"
        cols = ",\n  ".join(
            f"{c.name} {c.type}{' NOT NULL' if c.not_null else ''}" for c in self.columns
        )
        return f"CREATE TABLE IF NOT EXISTS {self.name} (\n  {cols}\n)"

    def comment_sql(self) -> list[str]:
        what = "VIEW" if self.kind == "view" else "TABLE"
        out = [f"COMMENT ON {what} {self.name} IS {_quote(self.doc)}"]
        out += [f"COMMENT ON COLUMN {self.name}.{c.name} IS {_quote(c.doc)}" for c in self.columns]
        return out


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


MONEY = "DECIMAL(18,6)"

ACCOUNT = Column(
    "account", "VARCHAR", "Configured account (company) name (CREDITLENS_ACCOUNT).", True
)
RUN_ID = Column("run_id", "VARCHAR", "Dagster run id of the sync that wrote the row.", True)
FETCHED_AT = Column("fetched_at", "TIMESTAMPTZ", "When creditlens fetched the data (UTC).", True)
CONTENT_HASH = Column(
    "content_hash",
    "VARCHAR",
    "SHA-256 of the canonical JSON of the response (volatile fields such as asOf excluded); "
    "an unchanged snapshot is not stored again.",
    True,
)
RAW_JSON = Column("raw_json", "VARCHAR", "The response as received, numbers exact.", True)
SHAPE_OK = Column(
    "shape_ok",
    "BOOLEAN",
    "False when the response did not have the expected shape; typed columns are then null "
    "and raw_json holds everything.",
    True,
)

LEDGER_ENTRIES = Table(
    "ledger_entries",
    "The credit ledger, one row per entry, exactly once: a sync replaces whole UTC days "
    "(account, entry_day) in one transaction. Amounts as the API gave them (see the sign "
    "convention in reconciliation outputs).",
    (
        ACCOUNT,
        Column(
            "entry_id",
            "VARCHAR",
            "Identity: fingerprint-occurrence. Unique per account; stable across reruns.",
            True,
        ),
        Column("created_at", "TIMESTAMPTZ", "createdAt of the entry (UTC).", True),
        Column("entry_day", "DATE", "UTC day of created_at; the unit a sync replaces.", True),
        Column(
            "entry_type", "VARCHAR", "type of the entry; an open set (never assume a list).", True
        ),
        Column("amount", MONEY, "amount exactly as the API gave it.", True),
        Column("description", "VARCHAR", "description (the reason)."),
        Column("has_description", "BOOLEAN", "hasDescription."),
        Column("channel", "VARCHAR", "channel; an open set. Null for entries not tied to one."),
        Column("agent_id", "VARCHAR", "agentId; null for entries not tied to an agent."),
        Column("campaign_id", "VARCHAR", "campaignId; null for entries not tied to a campaign."),
        Column("balance_after", MONEY, "balanceAfter: the balance after the entry.", True),
        Column(
            "extra", "VARCHAR", "Fields the API sent beyond the spec, as JSON text; null if none."
        ),
        Column(
            "fingerprint",
            "VARCHAR",
            "BLAKE2b-128 of the canonical text of every spec field (see README: identity rule).",
            True,
        ),
        Column(
            "occurrence",
            "INTEGER",
            "1..n among entries of the same account and day with the same fingerprint.",
            True,
        ),
        RUN_ID,
        FETCHED_AT,
        Column("window_start", "DATE", "First day of the API window the entry was read in.", True),
        Column("window_end", "DATE", "Last day (inclusive) of that window.", True),
        Column("page_number", "INTEGER", "pageNumber of the page the entry was read from.", True),
        Column("page_position", "INTEGER", "0-based position of the entry in that page.", True),
    ),
)

QUARANTINE = Table(
    "quarantine",
    "Entries fetched but not landed because they broke a validation rule: nothing is dropped "
    "silently. A sync replaces the quarantine rows of the days it covers, as for the ledger.",
    (
        ACCOUNT,
        RUN_ID,
        Column("quarantined_at", "TIMESTAMPTZ", "When the entry was quarantined (UTC).", True),
        Column("window_start", "DATE", "First day of the API window read.", True),
        Column("window_end", "DATE", "Last day (inclusive) of the API window read.", True),
        Column(
            "entry_day",
            "DATE",
            "UTC day the row belongs to (a sync over that day replaces it): the day of createdAt "
            "when readable and inside the window, else the window's first day.",
            True,
        ),
        Column("page_number", "INTEGER", "Page the entry came from.", True),
        Column("page_position", "INTEGER", "0-based position in that page.", True),
        Column("reason", "VARCHAR", "The rule the entry broke, in words.", True),
        Column("raw_json", "VARCHAR", "The entry as received, numbers exact.", True),
    ),
)

SYNC_RUNS = Table(
    "sync_runs",
    "One row per ledger sync: what was fetched, landed and quarantined. Invariant: "
    "entries_fetched = entries_landed + entries_quarantined.",
    (
        ACCOUNT,
        RUN_ID,
        Column("started_at", "TIMESTAMPTZ", "Start of the sync (UTC).", True),
        Column("finished_at", "TIMESTAMPTZ", "When its transaction committed (UTC).", True),
        Column("range_start", "DATE", "First UTC day replaced.", True),
        Column("range_end", "DATE", "Last UTC day replaced (inclusive).", True),
        Column("windows", "INTEGER", "API windows read (at most 366 days each).", True),
        Column("pages", "INTEGER", "Ledger pages requested (including re-reads and probes).", True),
        Column("window_restarts", "INTEGER", "Windows re-read because pages drifted.", True),
        Column("requests", "INTEGER", "HTTP requests sent.", True),
        Column("retries", "INTEGER", "Requests retried after a transient failure.", True),
        Column("entries_fetched", "BIGINT", "Entries in the accepted reads.", True),
        Column("entries_landed", "BIGINT", "Entries written to ledger_entries.", True),
        Column("entries_quarantined", "BIGINT", "Entries written to quarantine.", True),
        Column("duration_s", "DOUBLE", "Wall time of the sync in seconds.", True),
    ),
)

SUBSCRIPTION_SNAPSHOTS = Table(
    "subscription_snapshots",
    "History of GET /Subscription, appended when its content changes.",
    (
        ACCOUNT,
        FETCHED_AT,
        CONTENT_HASH,
        Column("plan", "VARCHAR", "plan."),
        Column("status", "VARCHAR", "status."),
        Column("features", "VARCHAR", "Active features, as a JSON array."),
        Column("limits", "VARCHAR", "Effective limits, as a JSON object."),
        Column("current_period_start", "TIMESTAMPTZ", "Start of the current billing period."),
        Column("current_period_end", "TIMESTAMPTZ", "End of the current billing period."),
        SHAPE_OK,
        RAW_JSON,
        RUN_ID,
    ),
)

CONSUMPTION_SNAPSHOTS = Table(
    "consumption_snapshots",
    "History of GET /Consumption (the credit balance summary), appended when it changes.",
    (
        ACCOUNT,
        FETCHED_AT,
        CONTENT_HASH,
        Column(
            "balance",
            MONEY,
            "Current balance, from the field CREDITLENS_SUMMARY_BALANCE_FIELD (default balance).",
        ),
        Column("credits_used", MONEY, "creditsUsed in the current period."),
        Column("credits_included", MONEY, "creditsIncluded in the current period."),
        Column("period_start", "TIMESTAMPTZ", "periodStart of the billing period."),
        Column("period_end", "TIMESTAMPTZ", "periodEnd of the billing period."),
        Column("as_of", "TIMESTAMPTZ", "asOf: when the platform computed the summary."),
        SHAPE_OK,
        RAW_JSON,
        RUN_ID,
    ),
)

BREAKDOWN_SNAPSHOTS = Table(
    "breakdown_snapshots",
    "History of GET /Consumption/breakdown: one row per item (agent, campaign, channel) per "
    "stored snapshot; a snapshot is stored when its content changes.",
    (
        ACCOUNT,
        FETCHED_AT,
        CONTENT_HASH,
        Column("period_start", "TIMESTAMPTZ", "periodStart of the breakdown."),
        Column("period_end", "TIMESTAMPTZ", "periodEnd of the breakdown."),
        Column("item_index", "INTEGER", "Position of the item in the response; null if none."),
        Column("agent_id", "VARCHAR", "agentId of the item."),
        Column("campaign_id", "VARCHAR", "campaignId of the item."),
        Column("channel", "VARCHAR", "channel of the item."),
        Column("credits", MONEY, "Credits consumed by the item in the period."),
        SHAPE_OK,
        RAW_JSON,
        RUN_ID,
    ),
)

CAMPAIGNS = Table(
    "campaigns",
    "History of GET /Campaign: one row per campaign per stored snapshot, appended when the "
    "list changes. The latest names are in campaigns_current.",
    (
        ACCOUNT,
        FETCHED_AT,
        CONTENT_HASH,
        Column("campaign_id", "VARCHAR", "Campaign id; null when the response was unreadable."),
        Column("name", "VARCHAR", "Campaign name (text from the API: escape before display)."),
        SHAPE_OK,
        RAW_JSON,
        RUN_ID,
    ),
)

CAMPAIGNS_CURRENT = Table(
    "campaigns_current",
    "The campaigns of the latest stored /Campaign snapshot of each account.",
    (
        ACCOUNT,
        Column("campaign_id", "VARCHAR", "Campaign id."),
        Column("name", "VARCHAR", "Campaign name."),
        FETCHED_AT,
    ),
    kind="view",
    view_sql=(
        "SELECT c.account, c.campaign_id, c.name, c.fetched_at FROM campaigns c "
        "JOIN (SELECT account, max(fetched_at) AS fetched_at FROM campaigns GROUP BY account) l "
        "USING (account, fetched_at) WHERE c.campaign_id IS NOT NULL"
    ),
)

SCHEMA_VERSION = Table(
    "schema_version",
    "Migrations applied to this warehouse, one row each.",
    (
        Column("version", "INTEGER", "Schema version reached.", True),
        Column("description", "VARCHAR", "What the migration did.", True),
        Column("applied_at", "TIMESTAMPTZ", "When it was applied (UTC).", True),
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
        Column("endpoints_readable", "VARCHAR[]", "Endpoints that answered 2xx with JSON.", True),
        Column(
            "endpoints_forbidden", "VARCHAR[]", "Endpoints that answered 403 (outside scope).", True
        ),
        Column("endpoints_rejected", "VARCHAR[]", "Endpoints that answered 401.", True),
        Column(
            "endpoints_unknown",
            "VARCHAR[]",
            "Endpoints with no usable answer (timeout, 429...).",
            True,
        ),
        Column("billing_exposed", "BOOLEAN", "Reads billing data beyond its intended scope.", True),
        Column("client_side_or_public", "BOOLEAN", "A listed use is client-side or public.", True),
        Column("severity", "VARCHAR", "Highest finding: none, low, medium, high, critical.", True),
        Column("findings", "INTEGER", "Number of findings about the key.", True),
        Column("places_listed", "VARCHAR[]", "Places the inventory lists for the key.", True),
        Column("places_found", "VARCHAR[]", "Files where the scan found the key.", True),
    ),
    since=2,
)


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    tables: tuple[Table, ...] = ()
    statements: tuple[str, ...] = ()


V1_TABLES = (
    LEDGER_ENTRIES,
    QUARANTINE,
    SYNC_RUNS,
    SUBSCRIPTION_SNAPSHOTS,
    CONSUMPTION_SNAPSHOTS,
    BREAKDOWN_SNAPSHOTS,
    CAMPAIGNS,
    CAMPAIGNS_CURRENT,
)

MIGRATIONS: list[Migration] = [
    Migration(1, "ledger, quarantine, sync runs and billing snapshots", V1_TABLES),
    Migration(2, "key-exposure audit", (KEY_AUDIT,)),
]


def all_tables() -> list[Table]:
    tables = [SCHEMA_VERSION]
    for migration in MIGRATIONS:
        tables.extend(migration.tables)
    return tables


def latest_version() -> int:
    return MIGRATIONS[-1].version


def data_dictionary() -> str:
    """README's data dictionary, generated from the same descriptions as the COMMENTs."""
    out = []
    for table in all_tables():
        out.append(f"### `{table.name}` ({table.kind})\n\n{table.doc}\n")
        out.append("| column | type | meaning |\n|---|---|---|")
        for c in table.columns:
            out.append(f"| `{c.name}` | {c.type}{' NOT NULL' if c.not_null else ''} | {c.doc} |")
        out.append("")
    return "\n".join(out)
