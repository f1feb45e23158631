"""Finance's monthly statement: a page and a CSV beside it, both exact to the last decimal."""

from __future__ import annotations

import csv
import io
from datetime import date

from dashboards import figures, paths
from dashboards.markup import Html, link, para, section
from dashboards.model import MOVEMENTS, STATEMENT_LINES, Account, Statement
from dashboards.money import decimal_text, money_text
from dashboards.pages.common import File, account_crumbs, month_label, page_file, when
from dashboards.pages.findings import month_movements, movement_brief
from dashboards.tables import Column, money_cell, table, text_cell
from transforms.aggregate import STATEMENT_MONEY_COLUMNS

CSV_COLUMNS = ("account", "month", *STATEMENT_MONEY_COLUMNS, "entries", "complete_month")


def statement_files(account: Account) -> list[File]:
    files = []
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
        files.append(_page(account, statement, complete, previous, following))
    return files


def _complete(account: Account, month: date) -> bool:
    return account.as_of is not None and month < account.as_of.replace(day=1)


def _spreadsheet_safe(text: str) -> str:
    """Text a spreadsheet would run as a formula (=, +, -, @) is quoted with an apostrophe."""
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def statement_csv(account: str, statement: Statement, complete: bool) -> str:
    """One row with the page's figures as exact decimal text (never through float)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerow(
        [
            _spreadsheet_safe(account),
            f"{statement.month:%Y-%m}",
            *[decimal_text(statement.figure(name)) for name, _ in STATEMENT_LINES],
            statement.entries,
            "true" if complete else "false",
        ]
    )
    return buffer.getvalue()


def _waterfall(statement: Statement) -> Html:
    names = [name.replace("_movements", "").capitalize() for name, _ in STATEMENT_LINES]
    values = [statement.figure(name) for name, _ in STATEMENT_LINES]
    measures = ["absolute", *["relative"] * len(MOVEMENTS), "total"]
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


def _page(
    account: Account,
    statement: Statement,
    complete: bool,
    previous: date | None,
    following: date | None,
) -> File:
    path = paths.statement(account.name, statement.month)
    title = f"Statement {month_label(statement.month)}"
    rows = [
        [text_cell(label), money_cell(statement.figure(name))] for name, label in STATEMENT_LINES
    ]
    check = (
        para(
            f"Check: opening {money_text(statement.opening)} + movements "
            f"{money_text(statement.movements)} = closing {money_text(statement.closing)}.",
            "ok",
        )
        if statement.balances
        else para(
            f"The statement does not balance: opening + movements = "
            f"{money_text(statement.opening + statement.movements)}, closing = "
            f"{money_text(statement.closing)}. Rerun the reconciliation.",
            "warn",
        )
    )
    status = (
        para(f"Complete month (data as of {when(account.as_of)}).")
        if complete
        else para(
            f"Month to date: the month is not over (data as of {when(account.as_of)}).", "warn"
        )
    )
    hidden = _hidden(account, statement)
    here = paths.relative
    nav = []
    if previous:
        nav.append(link(here(path, paths.statement(account.name, previous)), "← previous month"))
    if following:
        nav.append(link(here(path, paths.statement(account.name, following)), "next month →"))
    csv_name = paths.statement(account.name, statement.month, "csv")
    body = [
        status,
        table(
            f"Statement of {month_label(statement.month)} (credits)",
            [Column("Line"), Column("Amount", numeric=True)],
            rows,
            sortable=False,
        ),
        check,
        hidden,
        para(f"Entries in the month: {statement.entries:,}."),
        Html(
            f"<p>Download: {link(here(path, csv_name), f'statement-{statement.month:%Y-%m}.csv')}"
            " (exact decimals as text).</p>"
        ),
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
    return page_file(path, title, body, account=account.name, crumbs=crumbs, charts=True)
