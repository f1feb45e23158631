"""Where history begins, what no entry explains, and what people said about it.

``ledger_history`` records how history discovery decided where a company's ledger begins;
``hidden_movements`` is the one view of every balance movement no entry explains, whatever its
placement, with its acknowledgement; ``breakdown_mismatches`` keeps the breakdown's differences
apart, because they are credits of usage, not balance movements, and must never be summed with
them; ``break_acknowledgements`` is the log of ``creditlens breaks ack`` and ``unack``.
"""

from __future__ import annotations

from pipelines.warehouse.table import (
    ACCOUNT,
    MONEY,
    RUN_ID,
    Column,
    Table,
    columns,
    item_columns,
    money_column,
    span,
)

CHECKED_AT = Column("checked_at", "TIMESTAMPTZ", "When the reconciliation ran (UTC).", True)
BREAK_ID = Column(
    "break_id",
    "VARCHAR",
    "Stable id of the finding: the same movement or mismatch keeps it across reruns "
    "(give it to `creditlens breaks ack`).",
)

# What discovery probed and found on the way (migration 10); null in rows written before.
HISTORY_PROBED = (
    Column("windows_probed", "INTEGER", "366-day windows counted (a request of pageSize 1 each)."),
    Column(
        "entries_counted",
        "BIGINT",
        "Entries the windows counted, from searched_back_to through the day of discovery.",
    ),
    Column(
        "quiet_periods",
        "VARCHAR",
        "Whole windows with no entries between windows with entries, as FIRST..LAST days "
        "joined by '; ' (empty when none): a company silent that long, not where it began.",
    ),
    Column(
        "replaces_first_day",
        "DATE",
        "The first_day of an earlier discovery that stopped early (opens_at_zero), when this one "
        "probed the account again; null otherwise.",
    ),
)

LEDGER_HISTORY = Table(
    "ledger_history",
    "What history discovery found, one row per discovery: where the company's ledger begins, "
    "the balance before its first entry, and how that was decided. The ledger's first day "
    "(and the Dagster partitions' start) is the latest row's first_day unless "
    "CREDITLENS_LEDGER_START overrides it.",
    (
        ACCOUNT,
        Column("discovered_at", "TIMESTAMPTZ", "When discovery ran (UTC).", True),
        Column("first_day", "DATE", "UTC day of the first entry; null when none was found."),
        Column("first_entry_at", "TIMESTAMPTZ", "createdAt of the first entry."),
        money_column(
            "opening_balance",
            "balanceAfter minus the signed amount of the first entry: what the company held "
            "before it (0 for a ledger that explains its whole balance).",
            False,
        ),
        Column(
            "decided_by",
            "VARCHAR",
            "every_window (every 366-day window counted back to CREDITLENS_HISTORY_LIMIT; the "
            "earliest entry found) or no_entries (none in any window). Older rows may hold the "
            "older rule's values: opens_at_zero (it stopped at an empty window before a first "
            "entry whose balance before is 0, which a quiet period at zero also looks like; "
            "the next sync probes such an account again, once) and history_limit (probed back "
            "to CREDITLENS_HISTORY_LIMIT, as every_window).",
            True,
        ),
        Column("searched_back_to", "DATE", "The earliest day probed.", True),
        Column("history_limit", "INTEGER", "CREDITLENS_HISTORY_LIMIT in force, in days.", True),
        Column("requests", "INTEGER", "Requests discovery sent.", True),
        Column("detail", "VARCHAR", "The finding in one sentence.", True),
        RUN_ID,
        *HISTORY_PROBED,
    ),
    since=6,
)

BREAK_ACKNOWLEDGEMENTS = Table(
    "break_acknowledgements",
    "Every `creditlens breaks ack` and `unack`, never rewritten. A finding is acknowledged "
    "while its latest action is 'ack' and its gap is still the one acknowledged: an "
    "acknowledgement lapses when the break itself changes.",
    (
        ACCOUNT,
        Column("break_id", "VARCHAR", "hidden_movements.break_id or breakdown_mismatches.", True),
        Column("action", "VARCHAR", "ack or unack.", True),
        money_column("gap", "The finding's gap when acknowledged; null for unack.", False),
        Column("reason", "VARCHAR", "Why it is acknowledged (--reason)."),
        Column("acted_by", "VARCHAR", "Who and where: user@host.", True),
        Column("acted_at", "TIMESTAMPTZ", "When (UTC).", True),
    ),
    since=6,
)

# The latest action per finding (and the gap it named): the views and the reconciliation read it.
LATEST_ACTIONS = (
    "(SELECT account, break_id, arg_max(action, acted_at) AS action, "
    "arg_max(gap, acted_at) AS acked_gap, arg_max(reason, acted_at) AS reason, "
    "arg_max(acted_by, acted_at) AS acted_by, max(acted_at) AS acted_at "
    "FROM break_acknowledgements GROUP BY ALL)"
)


def acknowledged_sql(finding: str, gap: str) -> str:
    """The acknowledgement columns of a finding joined as ``a`` (one rule for both views)."""
    holds = f"coalesce(a.action = 'ack' AND a.acked_gap = {finding}.{gap}, false)"
    return (
        f"{holds} AS acknowledged, CASE WHEN {holds} THEN a.reason END AS acknowledged_reason, "
        f"CASE WHEN {holds} THEN a.acted_by END AS acknowledged_by, "
        f"CASE WHEN {holds} THEN a.acted_at END AS acknowledged_at"
    )


def _joined(table: str) -> str:
    return (
        f"LEFT JOIN {LATEST_ACTIONS} a ON a.account = {table}.account "
        f"AND a.break_id = {table}.break_id"
    )


_ACK_COLUMNS = (
    Column("acknowledged", "BOOLEAN", "True while acknowledged with this very gap.", True),
    Column("acknowledged_reason", "VARCHAR", "Why (from `creditlens breaks ack --reason`)."),
    Column("acknowledged_by", "VARCHAR", "Who acknowledged it: user@host."),
    Column("acknowledged_at", "TIMESTAMPTZ", "When it was acknowledged (UTC)."),
)

HIDDEN_MOVEMENTS = Table(
    "hidden_movements",
    "Every balance movement no ledger entry explains, whatever its placement, one row each, "
    "from the latest reconciliation. daily_balance and monthly_statement count each in the day "
    "and month of observed_on, so statements tie out to the platform's balance.",
    (
        ACCOUNT,
        BREAK_ID,
        Column(
            "placement",
            "VARCHAR",
            "before_first (before the first entry), between_entries, within_tie (between "
            "entries sharing a createdAt) or after_last (after the last entry, against the "
            "/Consumption balance).",
        ),
        Column("observed_on", "DATE", "UTC day whose balance carries the movement."),
        *span(
            "break",
            "TIMESTAMPTZ",
            "createdAt of the entry before the movement; null before the first entry.",
            "createdAt of the entry after it; null after the last entry.",
        ),
        money_column("expected_balance", "The balance the ledger leads to.", False),
        money_column(
            "observed_balance",
            "The balance found: the next entry's balance before it, or the platform's balance.",
            False,
        ),
        money_column("gap", "observed_balance - expected_balance: the movement.", False),
        Column("before_entry_id", "VARCHAR", "entry_id of the entry before the movement."),
        Column("after_entry_id", "VARCHAR", "entry_id of the entry after the movement."),
        Column("ambiguous", "BOOLEAN", "True when a tie's order leaves the exact place open."),
        *_ACK_COLUMNS,
        Column("detail", "VARCHAR", "The movement in one sentence: expected, actual, difference."),
        RUN_ID,
        CHECKED_AT,
    ),
    kind="view",
    view_sql=(
        "SELECT b.account, b.break_id, b.placement, b.observed_on, b.break_start, b.break_end, "
        "b.expected_balance, b.observed_balance, b.gap, b.before_entry_id, b.after_entry_id, "
        f"b.ambiguous, {acknowledged_sql('b', 'gap')}, b.detail, b.run_id, b.checked_at "
        f"FROM balance_breaks b {_joined('b')}"
    ),
    since=6,
)

BREAKDOWN_MISMATCHES = Table(
    "breakdown_mismatches",
    "The current period's /Consumption/breakdown items that differ from the ledger's debits, "
    "from the latest reconciliation of each account (replaced on each run). Credits of usage, "
    "not balance movements: never add them to hidden_movements.",
    (
        ACCOUNT,
        BREAK_ID,
        *span("period", "TIMESTAMPTZ", "The breakdown's period start.", "Its end (exclusive)."),
        *item_columns("The item's {}."),
        *columns(
            MONEY,
            True,
            ledger_credits="Gross debits of the item in the ledger within the period.",
            breakdown_credits="The breakdown's credits for the item.",
            difference="breakdown_credits - ledger_credits.",
        ),
        Column("detail", "VARCHAR", "The mismatch in one sentence: expected, actual, difference."),
        RUN_ID,
        CHECKED_AT,
    ),
    since=6,
)

BREAKDOWN_FINDINGS_SQL = (
    "SELECT m.*, "
    + acknowledged_sql("m", "difference")
    + f" FROM breakdown_mismatches m {_joined('m')}"
)
