"""What a reconciliation writes: breaks, the daily balance and its monthly statement, the
enriched ledger and one row per run. Each run replaces an account's rows (see derived.py).

The daily balance and the monthly statement are the same equation at two grains, so its terms
are named once, with the rule that fills them (``STATEMENT_MONEY_COLUMNS``,
transforms/aggregate.py); the enriched ledger's entry columns take their types and nullability
from the entry's declared fields, and its subscription terms from the snapshot's.
"""

from __future__ import annotations

from dataclasses import replace

from pipelines.api.ledger_entry import (
    AGENT_ID,
    AMOUNT,
    BALANCE_AFTER,
    CAMPAIGN_ID,
    CHANNEL,
    CREATED_AT,
    DESCRIPTION,
    TYPE,
    EntryField,
)
from pipelines.warehouse.finding_tables import BREAK_ID, CHECKED_AT
from pipelines.warehouse.snapshot_tables import SUBSCRIPTION_TERMS
from pipelines.warehouse.table import (
    ACCOUNT,
    MONEY,
    RUN_ID,
    Column,
    Table,
    entry_column,
    item_columns,
    money_column,
    span,
)
from transforms.aggregate import STATEMENT_MONEY_COLUMNS

# Added by migration 6, after the columns above, so a table made before it and one made since
# have the same columns in the same order.
BREAK_PLACEMENT = (
    BREAK_ID,
    Column(
        "placement",
        "VARCHAR",
        "before_first, between_entries, within_tie (between entries sharing a createdAt) or "
        "after_last.",
    ),
    Column("observed_on", "DATE", "UTC day whose daily_balance carries the movement."),
)


# Added by migration 8: the UTC day and month, so no analyst's grouping follows a session's
# time zone.
ENRICHED_DAYS = (
    Column("entry_day", "DATE", "UTC day of created_at."),
    Column("entry_month", "DATE", "First day of the UTC month of created_at."),
)

# Added by migration 6 (after the columns above): every placement counted, gross and net.
RUN_FINDINGS = (
    Column("hidden_movements", "INTEGER", "Movements of every placement (hidden_movements)."),
    money_column("hidden_gross", "Sum of the movements' absolute gaps.", False),
    money_column("hidden_net", "Sum of the movements' gaps.", False),
    Column("unacknowledged", "INTEGER", "Movements and mismatches not acknowledged."),
    Column(
        "opening_status",
        "VARCHAR",
        "ok (opens at zero), break, skipped (history left out) or unavailable (no entries).",
    ),
    Column("opening_message", "VARCHAR", "The balance before the first entry, in one sentence."),
)


def _carried(entry_field: EntryField, doc: str | None = None) -> Column:
    """An entry's field carried on to the enriched ledger, worded by its wire name by default."""
    return entry_column(entry_field, f"{entry_field.wire}." if doc is None else doc)


def _in_force(term: Column) -> Column:
    """A subscription term as the snapshot in force at the entry's createdAt had it."""
    return replace(term, doc=f"Subscription {term.name} in force at createdAt.")


def _movements(*docs: str) -> tuple[Column, ...]:
    """The balance equation's terms as money columns, each worded by its table."""
    return tuple(
        money_column(name, doc) for name, doc in zip(STATEMENT_MONEY_COLUMNS, docs, strict=True)
    )


def _monthly_sql() -> str:
    """The month's opening is its first day's, its closing its last day's; the rest add up.

    DuckDB widens a sum (DECIMAL(18,6) to DECIMAL(38,6), INTEGER to HUGEINT); the sums are cast
    back so the view has the types its columns promise, as the tables do.
    """
    opening, *flows, closing = STATEMENT_MONEY_COLUMNS
    sums = "".join(f"CAST(sum({name}) AS {MONEY}) AS {name}, " for name in flows)
    return (
        "SELECT account, CAST(date_trunc('month', day) AS DATE) AS month, "
        f"arg_min({opening}, day) AS {opening}, {sums}arg_max({closing}, day) AS {closing}, "
        "CAST(sum(entries) AS BIGINT) AS entries FROM daily_balance GROUP BY ALL"
    )


BALANCE_BREAKS = Table(
    "balance_breaks",
    "Every balance movement the ledger does not explain, from the latest reconciliation of each "
    "account (replaced on each run); the hidden_movements view adds acknowledgements. kind "
    "'continuity': between two entries; 'summary': the latest /Consumption balance against the "
    "last balanceAfter; 'opening': a balance before the first entry. Breakdown mismatches are "
    "credits of usage, not movements: they are in breakdown_mismatches (since version 6).",
    (
        ACCOUNT,
        Column("kind", "VARCHAR", "continuity, summary or opening.", True),
        *span(
            "break",
            "TIMESTAMPTZ",
            "createdAt of the last entry before the break; null if none.",
            "createdAt of the first entry after the break; null if none.",
        ),
        money_column(
            "expected_balance",
            "continuity/summary: the balance the ledger leads to; breakdown: the ledger's figure.",
            False,
        ),
        money_column(
            "observed_balance",
            "continuity: balanceAfter - amount of the entry after; summary: the snapshot's "
            "balance; breakdown: the breakdown's figure.",
            False,
        ),
        money_column("gap", "observed_balance - expected_balance.", False),
        Column("before_entry_id", "VARCHAR", "entry_id of the entry before the break."),
        Column("after_entry_id", "VARCHAR", "entry_id of the entry after the break."),
        *item_columns("Breakdown rows: the item's {}."),
        Column(
            "ambiguous",
            "BOOLEAN",
            "True when entries sharing a createdAt admit no order, or several orders with "
            "different results, so the break's exact place within the tie is uncertain.",
        ),
        Column("detail", "VARCHAR", "The break in one sentence: expected, actual, difference."),
        RUN_ID,
        CHECKED_AT,
        *BREAK_PLACEMENT,
    ),
    since=3,
)

DAILY_BALANCE = Table(
    "daily_balance",
    "Per account and UTC day with entries or a hidden movement: opening + debits + credits "
    "+ refunds + adjustments + other + hidden_movements = closing, exactly; each opening "
    "equals the previous closing. Movements are signed sums per category of entry type.",
    (
        ACCOUNT,
        Column("day", "DATE", "UTC day.", True),
        *_movements(
            "Balance before the day's first entry.",
            "Sum of signed amounts of debit types (usage, charges).",
            "Sum of signed amounts of credit types (grants, top-ups).",
            "Sum of signed amounts of refund types.",
            "Sum of signed amounts of adjustment types.",
            "Sum of signed amounts of any other type.",
            "Balance changes no entry explains, of every placement (see hidden_movements).",
            "balanceAfter of the day's last entry.",
        ),
        Column("entries", "INTEGER", "Entries that day (0 on a day with only a movement).", True),
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
        *_movements(
            "Opening balance of the month.",
            "Debits (negative under the signed convention).",
            "Credits: plan grants, top-ups.",
            "Refunds.",
            "Adjustments.",
            "Movements of other entry types.",
            "Balance changes no entry explains.",
            "Closing balance of the month.",
        ),
        Column("entries", "BIGINT", "Entries in the month."),
    ),
    kind="view",
    view_sql=_monthly_sql(),
    since=3,
)


def _enriched_columns(*, description: bool) -> tuple[Column, ...]:
    texts = (DESCRIPTION, CHANNEL, AGENT_ID, CAMPAIGN_ID) if description else (
        CHANNEL, AGENT_ID, CAMPAIGN_ID)  # fmt: skip
    return (
        ACCOUNT,
        Column("entry_id", "VARCHAR", "ledger_entries.entry_id.", True),
        Column("chain_position", "BIGINT", "Position in the balance chain (0-based).", True),
        _carried(CREATED_AT, "createdAt (UTC)."),
        _carried(TYPE),
        Column("category", "VARCHAR", "debit, credit, refund, adjustment or other.", True),
        _carried(AMOUNT, "amount as the API gave it."),
        money_column("signed_amount", "amount with the sign of its effect on the balance."),
        money_column("balance_before", "balance_after - signed_amount."),
        _carried(BALANCE_AFTER),
        *(_carried(f) for f in texts),
        Column("campaign_name", "VARCHAR", "Name from the latest campaigns snapshot."),
        *(_in_force(term) for term in SUBSCRIPTION_TERMS),
        Column(
            "subscription_backfilled",
            "BOOLEAN",
            "True when createdAt precedes the first subscription snapshot: plan and status are "
            "then unknown (null), never the first snapshot's plan carried back (since version "
            "8).",
        ),
        *ENRICHED_DAYS,
    )


_ENRICHED_DOC = (
    "Every landed entry in chain order with its signed amount and category, joined as of its "
    "createdAt with the subscription snapshot in force then and with its campaign's name. "
    "Rebuilt by each reconciliation."
)

# Until version 9 the enriched ledger was a table carrying each entry's description: a copy
# that reconciliation had to read and write under its memory bound, which 100 KB descriptions
# broke. Migrations 3 and 8 still build and alter that table; 9 turns it into the view below.
LEDGER_ENRICHED_TABLE = Table(
    "ledger_enriched", _ENRICHED_DOC, _enriched_columns(description=True), since=3
)

LEDGER_CHAIN = Table(
    "ledger_chain",
    "What reconciliation derives per entry (ledger_enriched without the entry's description, "
    "which stays in ledger_entries only). Query ledger_enriched instead.",
    _enriched_columns(description=False),
    since=9,
)

_ENRICHED_VIEW_COLUMNS = _enriched_columns(description=True)
LEDGER_ENRICHED = Table(
    "ledger_enriched",
    _ENRICHED_DOC,
    _ENRICHED_VIEW_COLUMNS,
    kind="view",
    view_sql=(
        "SELECT "
        + ", ".join(
            "e.description" if c.name == "description" else f"c.{c.name}"
            for c in _ENRICHED_VIEW_COLUMNS
        )
        + " FROM ledger_chain c JOIN ledger_entries e USING (account, entry_id)"
    ),
    since=9,
)

RECONCILED_FROM = Column(
    "reconciled_from",
    "DATE",
    "First UTC day this run rewrote (an incremental pass); NULL: every day (a full pass, or a "
    "run before this column). The month close reads only the months from it.",
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
        money_column("tolerance", "Largest gap treated as continuous (0 by default)."),
        Column("entries", "BIGINT", "Entries reconciled.", True),
        Column("continuity_breaks", "INTEGER", "Hidden movements found.", True),
        Column("ambiguous_ties", "INTEGER", "Tie groups whose order could not be decided.", True),
        Column("summary_status", "VARCHAR", "ok, break or unavailable (with summary_message)."),
        Column("summary_message", "VARCHAR", "Why the summary check said what it said."),
        Column("breakdown_status", "VARCHAR", "ok, break or unavailable."),
        Column("breakdown_message", "VARCHAR", "Why the breakdown check said what it said."),
        *RUN_FINDINGS,
        RECONCILED_FROM,
    ),
    since=3,
)
