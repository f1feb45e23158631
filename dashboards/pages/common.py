"""What the pages share: how a page becomes a file, their breadcrumbs, how they name things."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from dashboards import paths
from dashboards.display_text import display_text
from dashboards.markup import page
from dashboards.model import DIMENSION_NAMES

TITLES = {"agent_id": "Agents", "campaign_id": "Campaigns", "channel": "Channels"}


@dataclass(frozen=True)
class File:
    """A file of the site: its path inside the site and its content."""

    path: str
    content: str


SITE_CRUMBS: tuple[tuple[str, str], ...] = (("All accounts", paths.SITE_INDEX),)


def page_file(
    path: str,
    title: str,
    body: Sequence[str],
    *,
    account: str | None,
    crumbs: Sequence[tuple[str, str]],
    charts: bool = False,
    sortable: bool = False,
) -> File:
    """A page's links to its assets are relative to where it is written, so the page is rendered
    for the very path its file goes to: one argument, no chance of the two disagreeing."""
    return File(path, page(path, title, account, crumbs, body, charts=charts, sortable=sortable))


def account_crumbs(account: str) -> list[tuple[str, str]]:
    return [*SITE_CRUMBS, (account, paths.overview(account))]


def dimension_crumbs(account: str, dimension: str) -> list[tuple[str, str]]:
    index = paths.dimension_index(account, dimension)
    return [*account_crumbs(account), (TITLES[dimension], index)]


def value_title(dimension: str, name: str) -> str:
    """The title of a value's page: the name as a title shows it (it is also the page's <title>
    and its breadcrumb)."""
    return f"{DIMENSION_NAMES[dimension].capitalize()} {display_text(name)}"


def month_label(month: date) -> str:
    return f"{month:%B %Y}"


def when(moment: datetime | date | None) -> str:
    if moment is None:
        return "—"
    if isinstance(moment, datetime):
        return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    return moment.isoformat()
