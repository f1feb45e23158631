"""What the pages share: how a page becomes a file, their breadcrumbs, how they name things."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

from dashboards import paths
from dashboards.csv_files import csv_text
from dashboards.display_text import display_text
from dashboards.markup import Html, link, page
from dashboards.model import DIMENSION_NAMES
from dashboards.tables import Cell, Column, table, table_csv

TITLES = {"agent_id": "Agents", "campaign_id": "Campaigns", "channel": "Channels"}


@dataclass(frozen=True)
class File:
    """A file of the site: its path inside the site and its content."""

    path: str
    content: str


@dataclass
class Downloads:
    """The CSV files of one page, gathered as its tables are built: a table and its CSV come
    from the same rows in one call, so no table is shown without the file beside it."""

    page: str
    files: list[File] = field(default_factory=list)

    def table(
        self,
        name: str,
        caption: str,
        columns: Sequence[Column],
        rows: Iterable[Sequence[Cell]],
        *,
        csv_rows: Sequence[Sequence[Cell]] | None = None,
        **options: object,
    ) -> Html:
        """A table, and ``name`` (a file beside the page) holding its rows exactly; ``csv_rows``
        when the screen has rows the CSV has no use for (a statement's rounding line)."""
        rows = [list(row) for row in rows]
        if not rows:
            return table(caption, columns, rows, **options)  # type: ignore[arg-type]
        path = self.add(name, table_csv(columns, rows if csv_rows is None else csv_rows))
        download = (paths.relative(self.page, path), name)
        return table(caption, columns, rows, download=download, **options)  # type: ignore[arg-type]

    def data(
        self, name: str, header: Sequence[str], rows: Iterable[Sequence[object]], what: str
    ) -> Html:
        """A CSV of figures the page shows as a chart or a sentence, and the line linking it."""
        path = self.add(name, csv_text(header, rows))
        target = link(paths.relative(self.page, path), name)
        return Html(f'<p class="download">Download {target} ({what}, exact values)</p>')

    def add(self, name: str, content: str) -> str:
        path = posixpath.join(posixpath.dirname(self.page), name)
        self.files.append(File(path, content))
        return path


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
