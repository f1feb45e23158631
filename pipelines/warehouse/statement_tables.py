"""Closed statements as the warehouse keeps them: frozen, versioned, never rewritten
(docs/statements.md).

A month once closed is what finance was sent; a later change of its figures is a new version and
a line-by-line restatement, never an update, so "what did we issue for October, and when did it
change" is a query. Each version's lines and totals are child rows keyed by (account, month,
version); the ``closed_statements`` view gives each month's latest version.
"""

from __future__ import annotations

from pipelines.warehouse.table import ACCOUNT, MONEY, Column, Table, columns, money_column
from transforms.aggregate import STATEMENT_MONEY_COLUMNS

MONTH = Column("month", "DATE", "First day of the UTC month.", True)
VERSION = Column("version", "INTEGER", "1: the close; 2, 3, ...: each restatement, in order.", True)
KEY = (ACCOUNT, MONTH, VERSION)

# A lake's close can be read again as it read its figures (docs/lake.md#time-travel-to-a-close).
LAKE_SNAPSHOT = Column(
    "lake_snapshot",
    "BIGINT",
    "On a DuckLake warehouse, the lake snapshot this version's close read its figures at "
    "(`AT (VERSION => lake_snapshot)` reads the lake as it stood); NULL on a file warehouse "
    "and for versions recorded before this column.",
)

STATEMENT_CLOSES = Table(
    "statement_closes",
    "Each account's closed months, one row per version, never rewritten: version 1 is the "
    "close (once a sync covered the month's last day plus close_after_days), each later version "
    "a restatement (statement_restatements says what changed). Its lines are in "
    "statement_close_lines, its totals by agent, campaign and channel in statement_close_totals; "
    "closed_statements gives the latest version of each month.",
    (
        *KEY,
        *(
            money_column(name, f"The {name.replace('_', ' ')} line, as monthly_statement had it.")
            for name in STATEMENT_MONEY_COLUMNS
        ),
        Column("entries", "BIGINT", "Entries in the month.", True),
        Column(
            "content_hash",
            "VARCHAR",
            "SHA-256 of the version's lines and totals only: the same figures hash the same.",
            True,
        ),
        Column(
            "data_as_of",
            "TIMESTAMPTZ",
            "When the latest sync whose data the figures are committed (UTC).",
            True,
        ),
        Column("closed_at", "TIMESTAMPTZ", "When this version was recorded (UTC).", True),
        Column(
            "first_close",
            "BOOLEAN",
            "True for a month not sent when it closed: a check closed it with later months of "
            "the account at once (its first close covers every past month), and only the "
            "latest of them is sent; this one is sent by hand (`creditlens close --month`).",
            True,
        ),
        LAKE_SNAPSHOT,
    ),
    since=13,
)

STATEMENT_CLOSE_LINES = Table(
    "statement_close_lines",
    "The lines of each closed version: the summary lines (opening, debits, credits, refunds, "
    "adjustments, other, hidden_movements, closing; entry_type NULL) and each category's lines "
    "per entry type (statement_lines). opening + the movement lines + hidden_movements = closing.",
    (
        *KEY,
        Column("line_no", "INTEGER", "The line's place on the statement, from 1.", True),
        Column(
            "line",
            "VARCHAR",
            "The summary line's name (opening, debits, ... closing); an entry-type line is "
            "named by the summary line it makes up (debits for Usage).",
            True,
        ),
        Column("entry_type", "VARCHAR", "The API's type; NULL on a summary line."),
        money_column("amount", "Signed effect on the balance (the opening/closing: a balance)."),
        Column("entries", "BIGINT", "Entries on the line (0 for opening and closing).", True),
    ),
    since=13,
)

STATEMENT_CLOSE_TOTALS = Table(
    "statement_close_totals",
    "Each closed version's movements by agent, campaign and channel (signed: usage is "
    "negative); a NULL value is the entries without one (grants have no agent).",
    (
        *KEY,
        Column("dimension", "VARCHAR", "agent, campaign or channel.", True),
        Column("value", "VARCHAR", "The agent id, campaign id or channel; NULL: none."),
        money_column("amount", "Sum of the signed amounts of its entries in the month."),
        Column("entries", "BIGINT", "Its entries in the month.", True),
    ),
    since=13,
)

STATEMENT_RESTATEMENTS = Table(
    "statement_restatements",
    "Every figure a restatement changed, one row per line: what was issued (the previous "
    "version), what it is now, the difference and why (late entries, a hidden movement found "
    "in that month, an earlier month changed, reconciliation changed).",
    (
        ACCOUNT,
        MONTH,
        Column("version", "INTEGER", "The new version (statement_closes.version).", True),
        Column("previous_version", "INTEGER", "The version it restates.", True),
        Column(
            "line",
            "VARCHAR",
            "The line: a summary line's name, `credits TopUp` for an entry-type line, `agent "
            "agt_1` / `channel Phone` for a total (`agent (none)`: entries without one), "
            "`debits entries` when only a line's count of entries moved.",
            True,
        ),
        *columns(MONEY, True, was="As issued.", now="As restated.", difference="now - was."),
        Column("why", "VARCHAR", "Why it moved, in words.", True),
        Column("restated_at", "TIMESTAMPTZ", "When the restatement was recorded (UTC).", True),
    ),
    since=13,
)

_LATEST = (
    "SELECT * FROM statement_closes "
    "QUALIFY row_number() OVER (PARTITION BY account, month ORDER BY version DESC) = 1"
)

CLOSED_STATEMENTS = Table(
    "closed_statements",
    "Each account's closed months as they stand: the latest version's lines, when the month was "
    "first closed and last restated.",
    (
        ACCOUNT,
        MONTH,
        Column("version", "INTEGER", "The latest version (1: never restated).", True),
        *(
            money_column(name, f"The {name.replace('_', ' ')} line.")
            for name in STATEMENT_MONEY_COLUMNS
        ),
        Column("entries", "BIGINT", "Entries in the month.", True),
        Column("content_hash", "VARCHAR", "The latest version's hash.", True),
        Column("data_as_of", "TIMESTAMPTZ", "The latest version's data time (UTC).", True),
        Column("first_closed_at", "TIMESTAMPTZ", "When version 1 was recorded (UTC).", True),
        Column("restated_at", "TIMESTAMPTZ", "When the latest restatement was recorded; NULL."),
        LAKE_SNAPSHOT,
    ),
    since=13,
    kind="view",
    view_sql=(
        "SELECT l.account, l.month, l.version, "
        + "".join(f"l.{name}, " for name in STATEMENT_MONEY_COLUMNS)
        + "l.entries, l.content_hash, l.data_as_of, f.closed_at AS first_closed_at, "
        "CASE WHEN l.version > 1 THEN l.closed_at END AS restated_at, l.lake_snapshot "
        f"FROM ({_LATEST}) l JOIN statement_closes f "
        "ON f.account = l.account AND f.month = l.month AND f.version = 1"
    ),
)

STATEMENT_CHECKS = Table(
    "statement_checks",
    "One row per account and close check that read every month it had to: the latest "
    "reconciliation the check read, so the next check reads only the months a later "
    "reconciliation rewrote and those not closed yet (docs/statements.md). Never rewritten.",
    (
        ACCOUNT,
        Column("checked_at", "TIMESTAMPTZ", "When the check ran (UTC).", True),
        Column(
            "reconciled_through",
            "TIMESTAMPTZ",
            "checked_at of the account's latest reconciliation_runs row the check read.",
            True,
        ),
    ),
    since=16,
)

TABLES = (
    STATEMENT_CLOSES,
    STATEMENT_CLOSE_LINES,
    STATEMENT_CLOSE_TOTALS,
    STATEMENT_RESTATEMENTS,
    CLOSED_STATEMENTS,
)
