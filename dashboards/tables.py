"""Sortable tables, each with the exact values behind it: the sort key and the CSV beside it.

What a cell shows is for people (thousands separators, money to 0.01, a dash for nothing, a
month's name); what it sorts by is exact text (decimals never through float, ISO dates), so a
column sorts the same whatever the display rounds or words; what its CSV holds is the exact
value itself (``Cell.value``), written by dashboards/csv_files.py. An amount the screen rounds
carries its exact value in its tooltip.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from dashboards.csv_files import Name, csv_text
from dashboards.display_text import display_text
from dashboards.markup import Html, esc, link, para, shown_name
from dashboards.money import decimal_text, exact_money_text, is_rounded, money_text


@dataclass(frozen=True)
class Cell:
    """A table cell: what is shown, the exact key the sorter orders by, the exact value its CSV
    holds, and a tooltip (the exact amount, when the screen rounds it)."""

    shown: Html
    sort_key: str = ""
    numeric: bool = False
    value: object = None
    title: str = ""


def text_cell(value: object) -> Cell:
    return Cell(esc(value), "" if value is None else str(value), value=value)


def dash_cell() -> Cell:
    """Nothing: a dash on screen, an empty cell in the CSV."""
    return Cell(esc("—"))


def label_cell(value: object) -> Cell:
    """A name from the API: cut to a cell's length (longer in its tooltip), and sorted and
    written to the CSV as shown, so a 100 KB id is not copied into either."""
    return Cell(shown_name(value), display_text(value), value=_name(value))


def link_cell(href: str, text: object) -> Cell:
    return Cell(link(href, text), display_text(text), value=_name(text))


def _name(value: object) -> object:
    return Name(value) if isinstance(value, str) else value


def month_cell(month: date, shown: str) -> Cell:
    """A month: its name on screen, ``2026-03`` in the CSV, sorted by its ISO date."""
    return Cell(esc(shown), month.isoformat(), value=f"{month:%Y-%m}")


def money_cell(value: Decimal | None, shown: str | None = None) -> Cell:
    """An amount at the screen's precision; the exact one in the tooltip (when they differ),
    the sort key and the CSV."""
    title = f"exact: {exact_money_text(value)}" if is_rounded(value) else ""
    text = shown if shown is not None else money_text(value)
    return Cell(esc(text), decimal_text(value), True, value, title)


def number_cell(value: int | Decimal | None, shown: str | None = None) -> Cell:
    text = "—" if value is None else (shown if shown is not None else f"{value:,}")
    key = "" if value is None else decimal_text(Decimal(value))
    return Cell(esc(text), key, True, value)


@dataclass(frozen=True)
class Column:
    """A column; ``csv`` False for what only the screen needs (the rounding line of a statement:
    exactly zero in exact values, so the CSV has no use for it); ``csv_title`` when the screen's
    title would not make a header a spreadsheet keeps as text ("March 2026" opens as a date)."""

    title: str
    numeric: bool = False
    csv: bool = True
    csv_title: str | None = None
    # Cells that may hold long unbroken tokens (entry ids, file paths, names from outside):
    # they may break anywhere, so a wide table wraps inside its box instead of running past it.
    # Other cells keep their words whole.
    breakable: bool = False


def month_column(month: date | None, fallback: str) -> Column:
    """A column of one month's figures: its name on screen, ``consumption_2026-03`` as the CSV's
    header."""
    if month is None:
        return Column(fallback, numeric=True)
    return Column(f"{month:%B %Y}", numeric=True, csv_title=f"consumption_{month:%Y-%m}")


def numeric_columns(*titles: str) -> list[Column]:
    """Columns of figures: right-aligned, and sorted as numbers rather than as text."""
    return [Column(title, numeric=True) for title in titles]


def table_csv(columns: Sequence[Column], rows: Iterable[Sequence[Cell]]) -> str:
    """The table's rows as CSV: its column titles, each cell's exact value."""
    keep = [i for i, column in enumerate(columns) if column.csv]
    return csv_text(
        [columns[i].csv_title or columns[i].title for i in keep],
        ([row[i].value for i in keep] for row in rows),
    )


def table(
    caption: str,
    columns: Sequence[Column],
    rows: Iterable[Sequence[Cell]],
    *,
    sortable: bool = True,
    empty: str = "Nothing to show.",
    download: tuple[str, str] | None = None,
) -> Html:
    """A table with a caption and column headers; sortable ones carry buttons for assets/sort.js.

    ``download`` is (href, file name) of the CSV holding the same rows, linked right below.
    """
    body = []
    for row in rows:
        cells = []
        for column, cell in zip(columns, row, strict=True):
            classes = [c for c, on in (("num", column.numeric), ("any", column.breakable)) if on]
            cls = f' class="{" ".join(classes)}"' if classes else ""
            key = f' data-sort="{esc(cell.sort_key)}"' if sortable else ""
            title = f' title="{esc(cell.title)}"' if cell.title else ""
            cells.append(f"<td{cls}{key}{title}>{cell.shown}</td>")
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
    link_line = ""
    if download is not None:
        href, name = download
        link_line = (
            f'<p class="download">Download {link(href, name)} (these rows, exact values)</p>'
        )
    return Html(
        f'<div class="table-wrap"><table{cls}><caption>{esc(caption)}</caption>'
        f"<thead><tr>{''.join(heads)}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        f"{link_line}"
    )
