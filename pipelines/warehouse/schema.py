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


def _money_col(name: str, doc: str, not_null: bool = True) -> Column:
    return Column(name, MONEY, doc, not_null)


CHECKED_AT = Column("checked_at", "TIMESTAMPTZ", "When the reconciliation ran (UTC).", True)

BALANCE_BREAKS = Table(
    "balance_breaks",
    "Every place where the ledger does not explain the balance, from the latest reconciliation "
    "of each account (replaced on each run). kind 'continuity': a hidden movement between two "
    "entries; 'summary': the latest /Consumption balance against the last balanceAfter; "
    "'breakdown': the current period's breakdown against the ledger's debits.",
    (
        ACCOUNT,
        Column("kind", "VARCHAR", "continuity, summary or breakdown.", True),
        Column(
            "break_start",
            "TIMESTAMPTZ",
            "createdAt of the last entry before the break; null if none.",
        ),
        Column(
            "break_end",
            "TIMESTAMPTZ",
            "createdAt of the first entry after the break; null if none.",
        ),
        _money_col(
            "expected_balance",
            "continuity/summary: the balance the ledger leads to; breakdown: the ledger's figure.",
            False,
        ),
        _money_col(
            "observed_balance",
            "continuity: balanceAfter - amount of the entry after; summary: the snapshot's "
            "balance; breakdown: the breakdown's figure.",
            False,
        ),
        _money_col("gap", "observed_balance - expected_balance.", False),
        Column("before_entry_id", "VARCHAR", "entry_id of the entry before the break."),
        Column("after_entry_id", "VARCHAR", "entry_id of the entry after the break."),
        Column("agent_id", "VARCHAR", "Breakdown rows: the item's agentId."),
        Column("campaign_id", "VARCHAR", "Breakdown rows: the item's campaignId."),
        Column("channel", "VARCHAR", "Breakdown rows: the item's channel."),
        Column(
            "ambiguous",
            "BOOLEAN",
            "True when entries sharing a createdAt admit no order, or several orders with "
            "different results, so the break's exact place within the tie is uncertain.",
        ),
        Column("detail", "VARCHAR", "The break in one sentence: expected, actual, difference."),
        RUN_ID,
        CHECKED_AT,
    ),
    since=3,
)

DAILY_BALANCE = Table(
    "daily_balance",
    "Per account and UTC day with entries: opening + debits + credits + refunds + adjustments "
    "+ other + hidden_movements = closing, exactly; each opening equals the previous closing. "
    "Movements are signed sums per category of entry type.",
    (
        ACCOUNT,
        Column("day", "DATE", "UTC day.", True),
        _money_col("opening", "Balance before the day's first entry."),
        _money_col("debits", "Sum of signed amounts of debit types (usage, charges)."),
        _money_col("credits", "Sum of signed amounts of credit types (grants, top-ups)."),
        _money_col("refunds", "Sum of signed amounts of refund types."),
        _money_col("adjustments", "Sum of signed amounts of adjustment types."),
        _money_col("other", "Sum of signed amounts of any other type."),
        _money_col("hidden_movements", "Balance changes no entry explains (continuity gaps)."),
        _money_col("closing", "balanceAfter of the day's last entry."),
        Column("entries", "INTEGER", "Entries that day.", True),
        RUN_ID,
    ),
    since=3,
)

MONTHLY_STATEMENT = Table(
    "monthly_statement",
    "Finance's monthly statement per account: opening + debits + credits + refunds + "
    "adjustments + other + hidden_movements = closing, hidden movements on their own line.",
    (
        ACCOUNT,
        Column("month", "DATE", "First day of the month (UTC)."),
        _money_col("opening", "Opening balance of the month."),
        _money_col("debits", "Debits (negative under the signed convention)."),
        _money_col("credits", "Credits: plan grants, top-ups."),
        _money_col("refunds", "Refunds."),
        _money_col("adjustments", "Adjustments."),
        _money_col("other", "Movements of other entry types."),
        _money_col("hidden_movements", "Balance changes no entry explains."),
        _money_col("closing", "Closing balance of the month."),
        Column("entries", "BIGINT", "Entries in the month."),
    ),
    kind="view",
    view_sql=(
        "SELECT account, CAST(date_trunc('month', day) AS DATE) AS month, "
        "arg_min(opening, day) AS opening, sum(debits) AS debits, sum(credits) AS credits, "
        "sum(refunds) AS refunds, sum(adjustments) AS adjustments, sum(other) AS other, "
        "sum(hidden_movements) AS hidden_movements, arg_max(closing, day) AS closing, "
        "sum(entries) AS entries FROM daily_balance GROUP BY ALL"
    ),
    since=3,
)

LEDGER_ENRICHED = Table(
    "ledger_enriched",
    "Every landed entry in chain order with its signed amount and category, joined as of its "
    "createdAt with the subscription snapshot in force then and with its campaign's name. "
    "Rebuilt by each reconciliation.",
    (
        ACCOUNT,
        Column("entry_id", "VARCHAR", "ledger_entries.entry_id.", True),
        Column("chain_position", "BIGINT", "Position in the balance chain (0-based).", True),
        Column("created_at", "TIMESTAMPTZ", "createdAt (UTC).", True),
        Column("entry_type", "VARCHAR", "type.", True),
        Column("category", "VARCHAR", "debit, credit, refund, adjustment or other.", True),
        _money_col("amount", "amount as the API gave it."),
        _money_col("signed_amount", "amount with the sign of its effect on the balance."),
        _money_col("balance_before", "balance_after - signed_amount."),
        _money_col("balance_after", "balanceAfter."),
        Column("description", "VARCHAR", "description."),
        Column("channel", "VARCHAR", "channel."),
        Column("agent_id", "VARCHAR", "agentId."),
        Column("campaign_id", "VARCHAR", "campaignId."),
        Column("campaign_name", "VARCHAR", "Name from the latest campaigns snapshot."),
        Column("plan", "VARCHAR", "Subscription plan in force at createdAt."),
        Column("status", "VARCHAR", "Subscription status in force at createdAt."),
        Column(
            "subscription_backfilled",
            "BOOLEAN",
            "True when createdAt precedes the first subscription snapshot, whose plan and "
            "status then stand in for the unknown past.",
        ),
    ),
    since=3,
)

RECONCILIATION_RUNS = Table(
    "reconciliation_runs",
    "One row per reconciliation of an account: convention and tolerance used, what was found.",
    (
        ACCOUNT,
        RUN_ID,
        CHECKED_AT,
        Column("sign_convention", "VARCHAR", "signed or unsigned: the convention applied.", True),
        Column(
            "sign_inferred", "BOOLEAN", "True when the convention was inferred from the data.", True
        ),
        Column("pairs_explained_signed", "BIGINT", "Consecutive pairs continuous if signed."),
        Column("pairs_explained_unsigned", "BIGINT", "Consecutive pairs continuous if unsigned."),
        _money_col("tolerance", "Largest gap treated as continuous (0 by default)."),
        Column("entries", "BIGINT", "Entries reconciled.", True),
        Column("continuity_breaks", "INTEGER", "Hidden movements found.", True),
        Column("ambiguous_ties", "INTEGER", "Tie groups whose order could not be decided.", True),
        Column("summary_status", "VARCHAR", "ok, break or unavailable (with summary_message)."),
        Column("summary_message", "VARCHAR", "Why the summary check said what it said."),
        Column("breakdown_status", "VARCHAR", "ok, break or unavailable."),
        Column("breakdown_message", "VARCHAR", "Why the breakdown check said what it said."),
    ),
    since=3,
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
    Migration(
        3,
        "reconciliation: breaks, daily balance, monthly statement, enriched ledger",
        (BALANCE_BREAKS, DAILY_BALANCE, MONTHLY_STATEMENT, LEDGER_ENRICHED, RECONCILIATION_RUNS),
    ),
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
