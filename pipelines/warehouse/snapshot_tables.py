"""Histories of the platform's billing responses: one table per endpoint, appended on change.

Every snapshot table frames its own columns the same way (who, when, which content, and the
response itself with whether it had the expected shape), so the frame is declared once here.
"""

from __future__ import annotations

from pipelines.warehouse.table import (
    ACCOUNT,
    FETCHED_AT,
    MONEY,
    RUN_ID,
    Column,
    Table,
    item_columns,
    span,
)

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

# What an account's subscription is on; ledger_enriched carries them as of each entry's createdAt,
# so both tables take them from here.
SUBSCRIPTION_TERMS = (Column("plan", "VARCHAR", "plan."), Column("status", "VARCHAR", "status."))


def _snapshot_table(name: str, doc: str, columns: tuple[Column, ...]) -> Table:
    """A history table: the response's own columns inside the frame every snapshot shares."""
    return Table(
        name, doc, (ACCOUNT, FETCHED_AT, CONTENT_HASH, *columns, SHAPE_OK, RAW_JSON, RUN_ID)
    )


SUBSCRIPTION_SNAPSHOTS = _snapshot_table(
    "subscription_snapshots",
    "History of GET /Subscription, appended when its content changes.",
    (
        *SUBSCRIPTION_TERMS,
        Column("features", "VARCHAR", "Active features, as a JSON array."),
        Column("limits", "VARCHAR", "Effective limits, as a JSON object."),
        *span(
            "current_period",
            "TIMESTAMPTZ",
            "Start of the current billing period.",
            "End of the current billing period.",
        ),
    ),
)

CONSUMPTION_SNAPSHOTS = _snapshot_table(
    "consumption_snapshots",
    "History of GET /Consumption (the credit balance summary), appended when it changes.",
    (
        Column(
            "balance",
            MONEY,
            "Current balance, from the field CREDITLENS_SUMMARY_BALANCE_FIELD (default balance).",
        ),
        Column("credits_used", MONEY, "creditsUsed in the current period."),
        Column("credits_included", MONEY, "creditsIncluded in the current period."),
        *span(
            "period",
            "TIMESTAMPTZ",
            "periodStart of the billing period.",
            "periodEnd of the billing period.",
        ),
        Column("as_of", "TIMESTAMPTZ", "asOf: when the platform computed the summary."),
    ),
)

BREAKDOWN_SNAPSHOTS = _snapshot_table(
    "breakdown_snapshots",
    "History of GET /Consumption/breakdown: one row per item (agent, campaign, channel) per "
    "stored snapshot; a snapshot is stored when its content changes.",
    (
        *span(
            "period", "TIMESTAMPTZ", "periodStart of the breakdown.", "periodEnd of the breakdown."
        ),
        Column("item_index", "INTEGER", "Position of the item in the response; null if none."),
        *item_columns("{} of the item."),
        Column("credits", MONEY, "Credits consumed by the item in the period."),
    ),
)

CAMPAIGNS = _snapshot_table(
    "campaigns",
    "History of GET /Campaign: one row per campaign per stored snapshot, appended when the "
    "list changes. The latest names are in campaigns_current.",
    (
        Column("campaign_id", "VARCHAR", "Campaign id; null when the response was unreadable."),
        Column("name", "VARCHAR", "Campaign name (text from the API: escape before display)."),
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
