"""Views for an analyst's first questions, so the obvious query is the right one.

``SUM(amount) GROUP BY agent_id`` over the raw ledger gives negative totals plus a NULL-agent row
of grants; ``date_trunc('month', created_at)`` follows the session's time zone. These views say
the answer once: consumption as positive credits of usage (refunds flagged and netted), days and
months in UTC whatever the session's time zone, and the statement's lines per entry type. They
read ``ledger_enriched``, so they follow the sign convention and the entry-type rules the
reconciliation applied, and the report reads the same views.
"""

from __future__ import annotations

from pipelines.warehouse.table import ACCOUNT, MONEY, Column, Table, columns


def utc_day(column: str) -> str:
    """The UTC day of a TIMESTAMPTZ, the same whatever the session's TimeZone setting."""
    return f"CAST(timezone('UTC', {column}) AS DATE)"


def utc_month(column: str) -> str:
    return f"CAST(date_trunc('month', timezone('UTC', {column})) AS DATE)"


ENTRY_DAY = Column("entry_day", "DATE", "UTC day of created_at (whatever the session's TimeZone).")
ENTRY_MONTH = Column("entry_month", "DATE", "First day of the UTC month of created_at.")
_ITEM = columns(
    "VARCHAR",
    agent_id="The agent that consumed (null for account-level usage).",
    campaign_id="The campaign, if any.",
    campaign_name="The campaign's current name (campaigns_current).",
    channel="Phone, Chat, SMS, ...",
)

CONSUMPTION = Table(
    "consumption",
    "One row per usage entry (category debit) or refund of usage (category refund), from "
    "ledger_enriched: what was consumed, by whom, when (UTC). SUM(net_credits) is consumption "
    "net of refunds; SUM(credits) WHERE NOT refund is gross usage.",
    (
        ACCOUNT,
        Column("entry_id", "VARCHAR", "ledger_entries.entry_id.", True),
        Column("created_at", "TIMESTAMPTZ", "createdAt.", True),
        ENTRY_DAY,
        ENTRY_MONTH,
        *_ITEM,
        Column("entry_type", "VARCHAR", "The API's type (Usage, CallCharge, Refund, ...).", True),
        *columns(
            MONEY,
            True,
            credits="Credits, as a positive number: consumed, or given back by a refund.",
            net_credits="credits for usage, -credits for a refund: sums to net consumption.",
        ),
        Column("refund", "BOOLEAN", "True for a refund of usage.", True),
    ),
    kind="view",
    view_sql=(
        f"SELECT e.account, e.entry_id, e.created_at, {utc_day('e.created_at')} AS entry_day, "
        f"{utc_month('e.created_at')} AS entry_month, "
        "e.agent_id, e.campaign_id, c.name AS campaign_name, e.channel, e.entry_type, "
        f"CAST(abs(e.signed_amount) AS {MONEY}) AS credits, "
        f"CAST(-e.signed_amount AS {MONEY}) AS net_credits, "
        "e.category = 'refund' AS refund "
        "FROM ledger_enriched e LEFT JOIN campaigns_current c "
        "ON c.account = e.account AND c.campaign_id = e.campaign_id "
        "WHERE e.category IN ('debit', 'refund')"
    ),
    since=8,
)

CONSUMPTION_DAILY = Table(
    "consumption_daily",
    "consumption per account, UTC day, agent, campaign and channel.",
    (
        ACCOUNT,
        ENTRY_DAY,
        ENTRY_MONTH,
        *_ITEM,
        *columns(
            MONEY,
            True,
            usage_credits="Credits consumed (refunds not deducted).",
            refunded_credits="Credits given back by refunds.",
            net_credits="usage_credits - refunded_credits.",
        ),
        Column("entries", "BIGINT", "Usage and refund entries.", True),
    ),
    kind="view",
    view_sql=(
        "SELECT account, entry_day, entry_month, agent_id, campaign_id, campaign_name, channel, "
        f"CAST(coalesce(sum(credits) FILTER (NOT refund), 0) AS {MONEY}) AS usage_credits, "
        f"CAST(coalesce(sum(credits) FILTER (refund), 0) AS {MONEY}) AS refunded_credits, "
        f"CAST(sum(net_credits) AS {MONEY}) AS net_credits, "
        "CAST(count(*) AS BIGINT) AS entries FROM consumption GROUP BY ALL"
    ),
    since=8,
)

STATEMENT_LINES = Table(
    "statement_lines",
    "The monthly statement's movements per entry type: what 'debits', 'credits', 'refunds', "
    "'adjustments' and 'other' are made of (a Promotion and an Expiry are separate lines). Per "
    "account and UTC month, the lines of a category add up to monthly_statement's column.",
    (
        ACCOUNT,
        Column("month", "DATE", "First day of the UTC month.", True),
        Column("category", "VARCHAR", "debit, credit, refund, adjustment or other.", True),
        Column("entry_type", "VARCHAR", "The API's type.", True),
        Column("amount", MONEY, "Sum of signed amounts: the line's effect on the balance.", True),
        Column("entries", "BIGINT", "Entries on the line.", True),
    ),
    kind="view",
    view_sql=(
        f"SELECT account, {utc_month('created_at')} AS month, category, entry_type, "
        f"CAST(sum(signed_amount) AS {MONEY}) AS amount, "
        "CAST(count(*) AS BIGINT) AS entries FROM ledger_enriched GROUP BY ALL"
    ),
    since=8,
)
