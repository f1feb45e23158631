"""The site's front page: every account with its headline figures, and the key audit."""

from __future__ import annotations

from dashboards import paths
from dashboards.markup import Html, link, para, section
from dashboards.model import ReportData
from dashboards.pages.common import File, month_label, page_file, when
from dashboards.pages.overview import latest_balance, runway_text
from dashboards.tables import Column, link_cell, money_cell, number_cell, table, text_cell


def site_index_file(data: ReportData) -> File:
    path = paths.SITE_INDEX
    body: list[Html] = [para(n, "warn") for n in data.notices]
    if not data.accounts:
        body.append(para("The warehouse holds no account data yet: run creditlens sync.", "empty"))
    rows = []
    for account in data.accounts:
        month = account.report_month
        statement = account.statement(month)
        rows.append(
            [
                link_cell(paths.relative(path, paths.overview(account.name)), account.name),
                money_cell(latest_balance(account)),
                text_cell(runway_text(account)),
                number_cell(len(account.breaks)),
                (
                    link_cell(
                        paths.relative(path, paths.statement(account.name, month)),
                        month_label(month),
                    )
                    if statement is not None and month is not None
                    else text_cell("—")
                ),
                text_cell(when(account.as_of)),
            ]
        )
    body.append(
        section(
            "Accounts",
            table(
                "Accounts in this report",
                [
                    Column("Account"),
                    Column("Balance", numeric=True),
                    Column("Runway"),
                    Column("Breaks", numeric=True),
                    Column("Latest statement"),
                    Column("Data as of"),
                ],
                rows,
                empty="No accounts.",
            ),
        )
    )
    if data.key_audit:
        body.append(
            section(
                "Security",
                Html(f"<p>{link(paths.KEY_AUDIT, 'API key audit')} (all keys, every account)</p>"),
            )
        )
    return page_file(path, "Credit reports", body, account=None, crumbs=[], sortable=True)
