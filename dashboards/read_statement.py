"""Reading what a statement is made of: its lines per entry type, and the report month's
entries one by one, with the balance before and after each.

The entries are read for the report month only: the site's size and build time follow days,
agents and campaigns, and one month of entries is what finance reconciles at a time (another
month's: ``creditlens report --month YYYY-MM``). A description is cut at
``DESCRIPTION_LIMIT`` characters, an ellipsis marking the cut, in the CSV (the warehouse keeps
it whole): one 100 KB description per entry would otherwise make the file, and the build's
memory, follow it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, date, datetime

from dashboards import model, periods
from dashboards.read_findings import column_names
from pipelines.warehouse.read import ReadConnection
from pipelines.warehouse.read import rows as _rows
from transforms.entry_type import CATEGORIES

DESCRIPTION_LIMIT = 500
_OPTIONAL = ("campaign_name", "description")


def statement_lines(
    con: ReadConnection, tables: set[str], name: str
) -> dict[date, list[model.StatementLine]] | None:
    """Per month, each category's lines by entry type, in the statement's order; None when the
    warehouse predates the ``statement_lines`` view."""
    if "statement_lines" not in tables:
        return None
    found = _rows(
        con,
        "SELECT month, category, entry_type, amount, entries FROM statement_lines "
        "WHERE account = ? ORDER BY month, entry_type",
        [name],
    )
    out: dict[date, list[model.StatementLine]] = {}
    for month, category, entry_type, amount, entries in found:
        line = model.StatementLine(month, category, entry_type, amount, int(entries))
        out.setdefault(month, []).append(line)
    rank = {category: i for i, category in enumerate(CATEGORIES)}
    for lines in out.values():
        lines.sort(key=lambda line: (rank.get(line.category, len(rank)), line.entry_type))
    return out


def month_entries(
    con: ReadConnection, tables: set[str], name: str, month: date | None
) -> list[model.MonthEntry] | None:
    """The entries of ``month`` in chain order, each with the hidden movement just before it;
    None without a reconciled ledger or a month."""
    if month is None or "ledger_enriched" not in tables:
        return None
    present = column_names(con, "ledger_enriched")
    optional = {c: c if c in present else "NULL" for c in _OPTIONAL}
    start, end = _utc(month), _utc(periods.add_months(month, 1))
    previous = _rows(
        con,
        "SELECT balance_after FROM ledger_enriched WHERE account = ? AND created_at < ? "
        "ORDER BY chain_position DESC LIMIT 1",
        [name, start],
    )
    found = _rows(
        con,
        "SELECT entry_id, created_at, entry_type, category, signed_amount, "
        "balance_before - lag(balance_after) OVER (ORDER BY chain_position) AS hidden_before, "
        f"balance_before, balance_after, agent_id, campaign_id, {optional['campaign_name']}, "
        f"channel, {_cut(optional['description'])} "
        "FROM ledger_enriched WHERE account = ? AND created_at >= ? AND created_at < ? "
        "ORDER BY chain_position",
        [name, start, end],
    )
    entries = [model.MonthEntry(*row) for row in found]
    if entries and previous:  # the month's first entry follows the previous month's last
        gap = entries[0].balance_before - previous[0][0]
        entries[0] = replace(entries[0], hidden_before=gap)
    return entries


def _cut(column: str) -> str:
    """SQL cutting a text column to DESCRIPTION_LIMIT characters, an ellipsis marking a cut, so
    a long text is never read whole into memory."""
    if column == "NULL":
        return column
    keep = DESCRIPTION_LIMIT - 1
    return (
        f"CASE WHEN length({column}) > {DESCRIPTION_LIMIT} "
        f"THEN left({column}, {keep}) || '…' ELSE {column} END"
    )


def _utc(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def no_statement(month: date, accounts: Sequence[model.Account]) -> str:
    """Why a requested month has no statement, with the months each ledger does cover."""
    covered = [
        (a.name, a.statements[0].month, a.statements[-1].month) for a in accounts if a.statements
    ]
    head = f"no statement for {month:%Y-%m}"
    if not covered:
        return f"{head}: no account has reconciled ledger days yet; run `creditlens sync`"
    if len(accounts) == 1 and len(covered) == 1:
        _, first, last = covered[0]
        return f"{head}: the ledger covers {first:%Y-%m}..{last:%Y-%m}"
    spans = ", ".join(f"{n} {first:%Y-%m}..{last:%Y-%m}" for n, first, last in covered)
    return f"{head}: the ledgers cover {spans}"
