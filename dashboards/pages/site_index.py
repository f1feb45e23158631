"""The site's front page: every account with its headline figures, and the key audit.

The balance is shown twice, as on the overview: the platform's (/Consumption) and the ledger's
(the statement's last closing), with their difference. Hidden movements (balance changes no
entry explains) and breakdown mismatches (credits of usage the breakdown reports differently)
are separate columns: two units, never one count of "breaks".
"""

from __future__ import annotations

from dataclasses import replace

from dashboards import paths
from dashboards.markup import Html, link, para, section
from dashboards.model import Account, ReportData
from dashboards.money import signed_money_text
from dashboards.pages.account_status import status_section
from dashboards.pages.alerts import ALERTS
from dashboards.pages.balance import balances
from dashboards.pages.common import Downloads, File, month_label, page_file, when
from dashboards.pages.forecast import forecast_line
from dashboards.tables import Cell, Column, dash_cell, link_cell, money_cell, number_cell, text_cell


def site_index_file(data: ReportData) -> list[File]:
    path = paths.SITE_INDEX
    downloads = Downloads(path)
    body: list[Html] = [para(n, "warn") for n in data.notices]
    if not data.accounts:
        body.append(para("The warehouse holds no account data yet: run creditlens sync.", "empty"))
    rows = [_row(account, path) for account in data.accounts]
    body.append(
        section(
            "Accounts",
            downloads.table(
                "accounts.csv",
                "Accounts in this report",
                [
                    Column("Account"),
                    Column("Platform balance", numeric=True),
                    Column("Platform balance at"),
                    Column("Ledger balance", numeric=True),
                    Column("Difference (platform - ledger)", numeric=True),
                    Column("Forecast"),
                    Column("Hidden movements", numeric=True),
                    Column("Open hidden movements", numeric=True),
                    Column("Breakdown mismatches", numeric=True),
                    Column("Latest statement"),
                    Column("Data as of"),
                ],
                rows,
                empty="No accounts.",
            ),
        )
    )
    body.append(status_section(data, path, downloads))
    if data.alerts:
        firing = sum(a["state"] == "firing" and not a["acknowledged"] for a in data.alerts)
        body.append(section("Alerts", Html(f"<p>{link(ALERTS, 'Alerts')} ({firing} open)</p>")))
    if data.key_audit:
        body.append(
            section(
                "Security",
                Html(f"<p>{link(paths.KEY_AUDIT, 'API key audit')} (all keys, every account)</p>"),
            )
        )
    page = page_file(path, "Credit reports", body, account=None, crumbs=[], sortable=True)
    return [page, *downloads.files]


def _row(account: Account, path: str) -> list[Cell]:
    found = balances(account)
    difference = found.difference
    month = account.report_month
    statement = account.statement(month)
    return [
        link_cell(paths.relative(path, paths.overview(account.name)), account.name),
        money_cell(found.platform),
        text_cell(when(found.platform_at)) if found.platform_at else dash_cell(),
        money_cell(found.ledger),
        money_cell(difference, signed_money_text(difference)),
        text_cell(forecast_line(account)),
        number_cell(len(account.breaks)),
        number_cell(sum(1 for b in account.breaks if not b.acknowledged)),
        number_cell(len(account.mismatches)),
        (
            replace(
                link_cell(
                    paths.relative(path, paths.statement(account.name, month)),
                    month_label(month),
                ),
                value=f"{month:%Y-%m}",
            )
            if statement is not None and month is not None
            else dash_cell()
        ),
        text_cell(when(account.as_of)),
    ]
