"""Every account of the accounts file, with or without data: its last successful sync, its last
failure and its line, or that it was never synced.

The rest of the site is built from the data an account has; an account whose key was rejected
on its first sync has none, and a site that only lists what it has data for says nothing about
it. Here every account has a row, and one that fails (or never synced) has a page saying what
failed, when, and what to do.
"""

from __future__ import annotations

from dashboards import paths
from dashboards.markup import Html, facts, para, section
from dashboards.model import ReportData
from dashboards.pages.common import SITE_CRUMBS, Downloads, File, page_file
from dashboards.read import utc
from dashboards.tables import Cell, Column, dash_cell, link_cell, text_cell
from pipelines.warehouse.outcomes import AccountStatus

# What to do, by the step that failed; the line itself says what was wrong.
REMEDIES = {
    "settings": "Set the variable the accounts file names for this account (api_key_env) and "
    "its base_url, in the environment that runs the sync.",
    "discovery": "A key rejected here is rejected everywhere: check the key in the variable "
    "named by api_key_env (revoked, or of another company), or the base_url.",
    "ledger": "Check the key (api_key_env) and the base_url; a host that is down or slow is "
    "retried on the next sync by itself.",
    "snapshots": "The ledger landed; the billing snapshots did not. Check the key's scope "
    "(it must read /Consumption and /Subscription).",
    "reconciliation": "The data landed; reconciling it failed. Run the sync again; if it fails "
    "the same way, report the line.",
}
RERUN = "Then run `creditlens sync --account {name}`: the other accounts are not affected."


def needs_page(status: AccountStatus) -> bool:
    return status.status != "ok" or status.failing


def status_section(data: ReportData, path: str, downloads: Downloads) -> Html:
    """The index's table: one row per account, linked to its status page when it has one,
    else to its overview."""
    with_data = {a.name for a in data.accounts}
    rows = [_row(status, path, status.account in with_data) for status in data.statuses]
    return section(
        "Sync status",
        downloads.table(
            "sync-status.csv",
            "Every account's last sync",
            [
                Column("Account"),
                Column("Status"),
                Column("Last successful sync"),
                Column("Last failure"),
                Column("What failed"),
            ],
            rows,
            empty="No account is configured or recorded.",
        ),
    )


def _row(status: AccountStatus, path: str, has_data: bool) -> list[Cell]:
    name = status.account
    if needs_page(status):
        account = link_cell(paths.relative(path, paths.account_status(name)), name)
    elif has_data:
        account = link_cell(paths.relative(path, paths.overview(name)), name)
    else:
        account = text_cell(name)
    return [
        account,
        text_cell(status.status),
        text_cell(utc(status.last_success_at)),
        text_cell(utc(status.last_failure_at)) if status.last_failure_at else dash_cell(),
        text_cell(status.last_failure) if status.last_failure else dash_cell(),
    ]


def status_files(data: ReportData) -> list[File]:
    """A page for each account that fails or never synced."""
    return [_page(status) for status in data.statuses if needs_page(status)]


def _page(status: AccountStatus) -> File:
    name = status.account
    path = paths.account_status(name)
    body: list[Html] = []
    never = "was never synced" if status.last_success_at is None else "synced before"
    if status.failing:
        body.append(para(f"{name} {never}; its last sync failed: {status.last_failure}", "warn"))
    else:
        body.append(para(f"{name} was never synced.", "warn"))
    body.append(
        facts(
            [
                ("Status", status.status),
                ("Last successful sync", utc(status.last_success_at)),
                ("Last failure", utc(status.last_failure_at)),
                ("Failed step", status.last_failure_step or "—"),
            ]
        )
    )
    remedy = REMEDIES.get(status.last_failure_step or "", "Run `creditlens sync`.")
    body.append(section("What to do", para(remedy), para(RERUN.format(name=name))))
    title = f"{name}: sync status"
    return page_file(path, title, body, account=name, crumbs=[*SITE_CRUMBS, (name, path)])
