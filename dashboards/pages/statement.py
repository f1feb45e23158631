"""Finance's monthly statement: a page whose tables add up on screen, and CSVs of the exact figures.

Two tables, each adding up by itself: the statement by line (opening, the five categories,
hidden movements, closing) and the same month by entry type, so a Promotion (+) and an Expiry
(-), both "other", are two lines and never one net figure. Amounts are shown to 0.01; when
rounding each on its own leaves the rounded lines 0.01 away from the rounded closing, a
"Rounding" line shows that difference, so what is on screen adds up to the cent. The exact
figures are in each amount's tooltip and the CSVs, where they add up exactly with no such line.
The report month's statement also links its entries one by one.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from dashboards import figures, paths
from dashboards.csv_files import Name, csv_text
from dashboards.markup import Html, esc, link, para, section
from dashboards.model import (
    LINE_CATEGORY,
    STATEMENT_LINES,
    Account,
    MonthEntry,
    Statement,
    StatementLine,
)
from dashboards.money import money_text, rounding_difference
from dashboards.pages.common import Downloads, File, account_crumbs, month_label, page_file, when
from dashboards.pages.findings import month_movements, movement_brief
from dashboards.read_statement import DESCRIPTION_LIMIT
from dashboards.statement_csv import statement_csv
from dashboards.tables import Cell, Column, money_cell, number_cell, table, text_cell
from transforms.aggregate import STATEMENT_MOVEMENTS

ENTRY_COLUMNS = (
    "account",
    "entry_id",
    "created_at_utc",
    "entry_type",
    "category",
    "hidden_movement_before",
    "balance_before",
    "amount",
    "balance_after",
    "agent_id",
    "campaign_id",
    "campaign_name",
    "channel",
    "description",
)
ROUNDING_LABEL = "Rounding (screen only: each amount is shown to 0.01)"
NONE = Cell(esc(""))


def statement_files(account: Account) -> list[File]:
    files: list[File] = []
    for index, statement in enumerate(account.statements):
        previous = account.statements[index - 1].month if index else None
        following = (
            account.statements[index + 1].month if index + 1 < len(account.statements) else None
        )
        complete = _complete(account, statement.month)
        files.append(
            File(
                paths.statement(account.name, statement.month, "csv"),
                statement_csv(account.name, statement, complete),
            )
        )
        files.extend(_page(account, statement, complete, previous, following))
    return files


def _complete(account: Account, month: date) -> bool:
    return account.as_of is not None and month < account.as_of.replace(day=1)


def entries_csv(account: str, entries: list[MonthEntry]) -> str:
    """The month's entries in chain order: hidden movement before, balance before, amount (its
    effect on the balance, whatever the sign convention), balance after, so each row and each
    pair of rows adds up."""
    name = Name(account)
    return csv_text(
        ENTRY_COLUMNS,
        (
            (
                name,
                Name(e.entry_id),
                e.created_at,
                Name(e.entry_type),
                e.category,
                e.hidden_before,
                e.balance_before,
                e.signed_amount,
                e.balance_after,
                *(_name(v) for v in (e.agent_id, e.campaign_id, e.campaign_name, e.channel)),
                e.description,
            )
            for e in entries
        ),
    )


def _name(value: str | None) -> Name | None:
    return None if value is None else Name(value)


def _summary(statement: Statement, here: str, csv_path: str) -> Html:
    lines = [statement.opening, *(statement.figure(m) for m in STATEMENT_MOVEMENTS)]
    rows = [
        [text_cell(label), money_cell(statement.figure(name))]
        for name, label in STATEMENT_LINES[:-1]
    ]
    rounding = rounding_difference(lines)
    if rounding:
        rows.append([text_cell(ROUNDING_LABEL), money_cell(rounding)])
    rows.append([text_cell(STATEMENT_LINES[-1][1]), money_cell(statement.closing)])
    name = csv_path.rsplit("/", 1)[-1]
    return table(
        f"Statement of {month_label(statement.month)} (credits)",
        [Column("Line"), Column("Amount", numeric=True)],
        rows,
        sortable=False,
        download=(paths.relative(here, csv_path), name),
    )


def _by_type(
    account: Account, statement: Statement, downloads: Downloads
) -> tuple[Html, list[str]]:
    """The month by entry type, adding up by itself; and any category whose lines do not add
    up to the statement's figure (they always should: both come from the same entries)."""
    lines: list[StatementLine] = (account.lines or {}).get(statement.month, [])
    by_label = dict(STATEMENT_LINES)
    rows: list[list[Cell]] = [
        [text_cell(by_label["opening"]), NONE, NONE, money_cell(statement.opening)]
    ]
    amounts = [statement.opening]
    for line in lines:
        label = by_label[_line_of(line.category)]
        rows.append(
            [
                text_cell(label),
                text_cell(line.entry_type),
                number_cell(line.entries),
                money_cell(line.amount),
            ]
        )
        amounts.append(line.amount)
    rows.append(
        [
            text_cell(by_label["hidden_movements"]),
            text_cell("(no entry)"),
            NONE,
            money_cell(statement.hidden_movements),
        ]
    )
    amounts.append(statement.hidden_movements)
    closing = [text_cell(by_label["closing"]), NONE, NONE, money_cell(statement.closing)]
    exact_rows = [*rows, closing]
    rounding = rounding_difference(amounts)
    if rounding:
        rows.append([text_cell(ROUNDING_LABEL), NONE, NONE, money_cell(rounding)])
    rows.append(closing)
    off = [
        by_label[name]
        for name, category in LINE_CATEGORY.items()
        if sum((x.amount for x in lines if x.category == category), Decimal(0))
        != statement.figure(name)
    ]
    html = downloads.table(
        f"statement-{statement.month:%Y-%m}-lines.csv",
        f"{month_label(statement.month)} by entry type: every line adds up to the closing",
        [
            Column("Line"),
            Column("Entry type"),
            Column("Entries", numeric=True),
            Column("Amount", numeric=True),
        ],
        rows,
        csv_rows=exact_rows,
        sortable=False,
    )
    return html, off


def _line_of(category: str) -> str:
    return next((n for n, c in LINE_CATEGORY.items() if c == category), "other")


def _waterfall(statement: Statement) -> Html:
    names = [name.replace("_movements", "").capitalize() for name, _ in STATEMENT_LINES]
    values = [statement.figure(name) for name, _ in STATEMENT_LINES]
    measures = ["absolute", *["relative"] * len(STATEMENT_MOVEMENTS), "total"]
    return figures.embed(
        f"Balance walk, {month_label(statement.month)}",
        [
            {
                "type": "waterfall",
                "x": names,
                "y": [
                    figures.plot_number(v) if m != "total" else 0
                    for v, m in zip(values, measures, strict=True)
                ],
                "measure": measures,
                "customdata": figures.money_hover(values),
                "hovertemplate": "%{x}: %{customdata}<extra></extra>",
                "connector": {"line": {"color": "#9aa3b2"}},
            }
        ],
        {"showlegend": False},
    )


def _hidden(account: Account, statement: Statement) -> Html:
    """The month's hidden movements line, named one by one: the figure alone would not say
    which findings it holds, nor whether someone has explained them."""
    found = month_movements(account.breaks, statement.month)
    if not statement.hidden_movements and not found:
        return para("No hidden movements this month.")
    named = "; ".join(movement_brief(b) for b in found)
    return para(
        f"Hidden movements of {money_text(statement.hidden_movements)}: balance changes that "
        "no ledger entry explains, each counted on the day it is observed."
        + (f" This month: {named}." if named else "")
        + " See the reconciliation page for each one; acknowledge a known one with "
        "`creditlens breaks ack <break id> --reason …`.",
        "warn" if not found or any(not b.acknowledged for b in found) else "ok",
    )


def _check(statement: Statement, off: list[str]) -> Html:
    """Whether the statement ties out, said of the exact figures: the page never writes a sum
    of rounded amounts it does not show."""
    if not statement.balances:
        return para(
            "The statement does not balance: opening + movements - closing = "
            f"{money_text(statement.opening + statement.movements - statement.closing)} "
            "(exact figures). Rerun the reconciliation.",
            "warn",
        )
    if off:
        return para(
            "The lines by entry type do not add up to the statement's "
            + ", ".join(off)
            + ": rerun the reconciliation.",
            "warn",
        )
    return para(
        "Ties out: opening + every movement = closing, exactly, in the exact figures (hover an "
        "amount, or the CSVs), and each category's entry types add up to its line.",
        "ok",
    )


def _entries(account: Account, statement: Statement, downloads: Downloads) -> Html:
    text = f"Entries in the month: {statement.entries:,}."
    if account.report_month == statement.month and account.month_entries is not None:
        name = f"statement-{statement.month:%Y-%m}-entries.csv"
        path = downloads.add(name, entries_csv(account.name, account.month_entries))
        target = link(paths.relative(downloads.page, path), name)
        return Html(
            f"<p>{esc(text)} Download {target} (every entry in chain order with the hidden "
            "movement before it and the balance before and after it; exact values; "
            f"descriptions cut at {DESCRIPTION_LIMIT:,} characters).</p>"
        )
    return para(
        f"{text} The entries one by one are written for the report month only: "
        f"`creditlens report --month {statement.month:%Y-%m}` writes them for this one."
    )


def _closed(account: Account, month: date) -> list[Html]:
    """The month's close and, line by line, each restatement of it (docs/statements.md): the
    figures below are the month as it stands now, so what changed since it was issued is said."""
    out = [para(account.closes[month])] if month in account.closes else []
    restated = account.restated.get(month, [])
    if restated:
        out.append(section("Restated", *(para(line, "warn") for line in restated)))
    return out


def _page(
    account: Account,
    statement: Statement,
    complete: bool,
    previous: date | None,
    following: date | None,
) -> list[File]:
    path = paths.statement(account.name, statement.month)
    downloads = Downloads(path)
    title = f"Statement {month_label(statement.month)}"
    status = (
        para(f"Complete month (data as of {when(account.as_of)}).")
        if complete
        else para(
            f"Month to date: the month is not over (data as of {when(account.as_of)}).", "warn"
        )
    )
    here = paths.relative
    nav = []
    if previous:
        nav.append(link(here(path, paths.statement(account.name, previous)), "← previous month"))
    if following:
        nav.append(link(here(path, paths.statement(account.name, following)), "next month →"))
    csv_path = paths.statement(account.name, statement.month, "csv")
    if account.lines is None:
        by_type: Html = para(
            "This warehouse has no statement_lines view yet: `creditlens sync` with this "
            "version of creditlens adds it, and the lines by entry type.",
            "empty",
        )
        off: list[str] = []
    else:
        by_type, off = _by_type(account, statement, downloads)
    body = [
        status,
        *_closed(account, statement.month),
        _summary(statement, path, csv_path),
        _check(statement, off),
        _hidden(account, statement),
        section("By entry type", by_type, _entries(account, statement, downloads)),
        _waterfall(statement),
        section(
            "Related",
            Html(
                "<p>"
                + " · ".join(
                    [*nav, link(here(path, paths.reconciliation(account.name)), "reconciliation")]
                )
                + "</p>"
            ),
        ),
    ]
    crumbs = account_crumbs(account.name)
    page = page_file(path, title, body, account=account.name, crumbs=crumbs, charts=True)
    return [page, *downloads.files]
