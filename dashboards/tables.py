"""Sortable tables: every cell carries the exact key ``assets/sort.js`` orders its column by.

What a cell shows is for people (thousands separators, a dash for nothing, a month's name); what
it sorts by is exact text (decimals never through float, ISO dates), so a column sorts the same
whatever the display rounds or words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from dashboards.display_text import display_text
from dashboards.markup import Html, esc, link, para, shown_name
from dashboards.money import decimal_text, money_text


@dataclass(frozen=True)
class Cell:
    """A table cell: what is shown, and the exact key the sorter orders by."""

    shown: Html
    sort_key: str = ""
    numeric: bool = False


def text_cell(value: object) -> Cell:
    return Cell(esc(value), "" if value is None else str(value))


def label_cell(value: object) -> Cell:
    """A name from the API: cut to a cell's length (whole in its tooltip), and sorted by what
    is shown, so a 100 KB id is not copied into its sort key either."""
    return Cell(shown_name(value), display_text(value))


def link_cell(href: str, text: object) -> Cell:
    return Cell(link(href, text), display_text(text))


def money_cell(value: Decimal | None, shown: str | None = None) -> Cell:
    return Cell(esc(shown if shown is not None else money_text(value)), decimal_text(value), True)


def number_cell(value: int | Decimal | None, shown: str | None = None) -> Cell:
    text = "—" if value is None else (shown if shown is not None else f"{value:,}")
    key = "" if value is None else decimal_text(Decimal(value))
    return Cell(esc(text), key, True)


@dataclass(frozen=True)
class Column:
    title: str
    numeric: bool = False


def numeric_columns(*titles: str) -> list[Column]:
    """Columns of figures: right-aligned, and sorted as numbers rather than as text."""
    return [Column(title, numeric=True) for title in titles]


def table(
    caption: str,
    columns: Sequence[Column],
    rows: Iterable[Sequence[Cell]],
    *,
    sortable: bool = True,
    empty: str = "Nothing to show.",
) -> Html:
    """A table with a caption and column headers; sortable ones carry buttons for assets/sort.js."""
    body = []
    for row in rows:
        cells = []
        for column, cell in zip(columns, row, strict=True):
            cls = ' class="num"' if column.numeric else ""
            key = f' data-sort="{esc(cell.sort_key)}"' if sortable else ""
            cells.append(f"<td{cls}{key}>{cell.shown}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    if not body:
        return para(empty, "empty")
    heads = []
    for column in columns:
        kind = "number" if column.numeric else "text"
        cls = ' class="num"' if column.numeric else ""
        title = esc(column.title)
        inner = f'<button type="button">{title}</button>' if sortable else title
        heads.append(f'<th scope="col"{cls} data-type="{kind}">{inner}</th>')
    cls = ' class="sortable"' if sortable else ""
    return Html(
        f'<div class="table-wrap"><table{cls}><caption>{esc(caption)}</caption>'
        f"<thead><tr>{''.join(heads)}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )
