"""HTML building blocks: every piece of text passes through ``esc`` on its way in.

No template engine: pages are small, and f-strings over escaped values keep the one rule visible
(text from the API is data, never markup). ``Html`` marks strings that are already markup, so a
value is escaped exactly once.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from dashboards import paths
from dashboards.money import decimal_text, money_text


class Html(str):
    """Markup built by this package; everything else is text and gets escaped."""


def esc(value: object) -> Html:
    if isinstance(value, Html):
        return value
    return Html(html.escape("" if value is None else str(value), quote=True))


def join(parts: Iterable[str]) -> Html:
    return Html("".join(esc(p) for p in parts))


def link(href: str, text: object) -> Html:
    return Html(f'<a href="{esc(href)}">{esc(text)}</a>')


def para(text: object, css: str = "") -> Html:
    cls = f' class="{esc(css)}"' if css else ""
    return Html(f"<p{cls}>{esc(text)}</p>")


def section(title: str, *body: str, level: int = 2) -> Html:
    return Html(f"<section><h{level}>{esc(title)}</h{level}>{join(body)}</section>")


@dataclass(frozen=True)
class Cell:
    """A table cell: what is shown, and the exact key the sorter orders by."""

    shown: Html
    sort_key: str = ""
    numeric: bool = False


def text_cell(value: object) -> Cell:
    return Cell(esc(value), "" if value is None else str(value))


def link_cell(href: str, text: object) -> Cell:
    return Cell(link(href, text), str(text))


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


def facts(rows: Iterable[tuple[str, object]]) -> Html:
    """A definition list of label/value pairs (headline figures)."""
    items = "".join(f"<dt>{esc(label)}</dt><dd>{esc(value)}</dd>" for label, value in rows)
    return Html(f'<dl class="facts">{items}</dl>')


def page(
    *,
    path: str,
    title: str,
    account: str | None,
    breadcrumbs: Sequence[tuple[str, str]],
    body: Sequence[str],
    charts: bool = False,
    sortable: bool = False,
) -> str:
    """A whole page. ``path`` is the page's own site path, so asset links are relative to it."""

    def href(target: str) -> str:
        return paths.relative(path, target)

    crumbs = [link(href(target), label) for label, target in breadcrumbs]
    crumbs.append(Html(f'<span aria-current="page">{esc(title)}</span>'))
    scripts = []
    if charts:
        scripts.append(paths.asset("plotly.min.js"))
        scripts.append(paths.asset("charts.js"))
    if sortable:
        scripts.append(paths.asset("sort.js"))
    script_tags = "".join(f'<script src="{esc(href(s))}" defer></script>' for s in scripts)
    account_line = (
        f'<p class="account">Account: <strong>{esc(account)}</strong></p>' if account else ""
    )
    full_title = f"{title} · {account} · creditlens" if account else f"{title} · creditlens"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{esc(full_title)}</title>"
        f'<link rel="stylesheet" href="{esc(href(paths.asset("site.css")))}">'
        f"{script_tags}</head><body>"
        f'<header><nav aria-label="Breadcrumb">{" / ".join(crumbs)}</nav>'
        f"<h1>{esc(title)}</h1>{account_line}</header>"
        f"<main>{join(body)}</main>"
        "<footer><p>Generated by creditlens from the warehouse; amounts in credits.</p></footer>"
        "</body></html>\n"
    )
