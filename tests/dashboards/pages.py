"""Reading the generated HTML back: tables, links and script tags, with the stdlib parser.

``rows`` holds every table row of the page in order; ``tables`` the same rows by the caption of
their table, for a page with several, and ``titles`` each cell's tooltip in the same places (the
exact amount where the screen rounds it); ``downloads`` the CSV linked below each table, by
caption; ``text`` the page's text, spaces collapsed, and ``visible`` the same without the
figures' JSON.
"""

from __future__ import annotations

from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

# The captions of the reconciliation page's two tables of findings.
MOVEMENTS = "Every hidden movement of the latest reconciliation"
MISMATCHES = "Every breakdown item that differs from the ledger (credits of usage)"


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.links: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.title = ""
        self.tables: dict[str, list[list[str]]] = {}
        self.titles: dict[str, list[list[str]]] = {}
        self.downloads: dict[str, str] = {}
        self._texts: list[str] = []
        self._visible: list[str] = []
        self._table: list[list[str]] | None = None
        self._table_titles: list[list[str]] | None = None
        self._caption: list[str] | None = None
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._row_titles: list[str] | None = None
        self._in_title = False
        self._in_script = False
        self._last_caption: str | None = None
        self._in_download = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "table":
            self._table = []
            self._table_titles = []
        elif tag == "caption":
            self._caption = []
        elif tag == "tr":
            self._row = []
            self._row_titles = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            if self._row_titles is not None:
                self._row_titles.append(attributes.get("title") or "")
        elif tag == "p" and attributes.get("class") == "download":
            self._in_download = True
        elif tag in ("a", "link") and attributes.get("href"):
            self.links.append(attributes["href"] or "")
            if self._in_download and self._last_caption is not None:
                self.downloads.setdefault(self._last_caption, attributes["href"] or "")
        elif tag == "script":
            self._in_script = True
            self.scripts.append(attributes)
            if attributes.get("src"):
                self.links.append(attributes["src"] or "")
        elif tag == "title":
            self._in_title = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            if self._table is not None and self._table_titles is not None:
                self._table.append(self._row)
                self._table_titles.append(self._row_titles or [])
            self._row = None
        elif tag == "caption" and self._caption is not None and self._table is not None:
            caption = "".join(self._caption).strip()
            self.tables[caption] = self._table
            self.titles[caption] = self._table_titles if self._table_titles is not None else []
            self._last_caption = caption
            self._caption = None
        elif tag == "table":
            self._table = None
        elif tag == "p":
            self._in_download = False
        elif tag == "script":
            self._in_script = False
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        self._texts.append(data)
        if not self._in_script:
            self._visible.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._caption is not None:
            self._caption.append(data)
        if self._in_title:
            self.title += data

    @property
    def text(self) -> str:
        return " ".join(" ".join(self._texts).split())

    @property
    def visible(self) -> str:
        return " ".join(" ".join(self._visible).split())

    def exact(self, caption: str) -> list[dict[str, str]]:
        """A table's rows by column title, each cell its exact value: the tooltip's figure
        where the screen rounds an amount, else what it shows."""
        header, *body = self.tables[caption]
        titles = self.titles[caption][1:]
        out = []
        for row, tips in zip(body, titles, strict=True):
            cells = [
                tip.removeprefix("exact: ") if tip.startswith("exact: ") else shown
                for shown, tip in zip(row, tips, strict=True)
            ]
            out.append(dict(zip(header, cells, strict=True)))
        return out


def read_page(path: Path) -> _Reader:
    reader = _Reader()
    reader.feed(path.read_text(encoding="utf-8"))
    reader.close()
    return reader


def records(rows: list[list[str]]) -> list[dict[str, str]]:
    """A table's rows as dicts by column title (the first row)."""
    header, *body = rows
    return [dict(zip(header, row, strict=True)) for row in body]


def money(text: str) -> Decimal:
    """A figure as a page shows it (thousands separators, a sign shown) back to its Decimal."""
    return Decimal(text.replace(",", "").removeprefix("+"))
