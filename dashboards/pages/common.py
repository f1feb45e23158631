"""What the account pages share: their breadcrumbs and how they name dimension values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from dashboards import paths
from dashboards.model import DIMENSION_NAMES

TITLES = {"agent_id": "Agents", "campaign_id": "Campaigns", "channel": "Channels"}


@dataclass(frozen=True)
class File:
    """A file of the site: its path inside the site and its content."""

    path: str
    content: str


def account_crumbs(account: str) -> list[tuple[str, str]]:
    return [("All accounts", paths.SITE_INDEX), (account, paths.overview(account))]


def dimension_crumbs(account: str, dimension: str) -> list[tuple[str, str]]:
    index = paths.dimension_index(account, dimension)
    return [*account_crumbs(account), (TITLES[dimension], index)]


def value_title(dimension: str, name: str) -> str:
    return f"{DIMENSION_NAMES[dimension].capitalize()} {name}"


def month_label(month: date) -> str:
    return f"{month:%B %Y}"


def when(moment: datetime | date | None) -> str:
    if moment is None:
        return "—"
    if isinstance(moment, datetime):
        return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    return moment.isoformat()
