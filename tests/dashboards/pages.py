"""Reading the generated HTML back: tables, links and script tags, with the stdlib parser.

``rows`` holds every table row of the page in order; ``tables`` the same rows by the caption of
their table, for a page with several; ``text`` the page's visible text, spaces collapsed.
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
        self._texts: list[str] = []
        self._table: list[list[str]] | None = None
        self._caption: list[str] | None = None
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "table":
            self._table = []
        elif tag == "caption":
            self._caption = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag in ("a", "link") and attributes.get("href"):
            self.links.append(attributes["href"] or "")
        elif tag == "script":
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
            if self._table is not None:
                self._table.append(self._row)
            self._row = None
        elif tag == "caption" and self._caption is not None and self._table is not None:
            self.tables["".join(self._caption).strip()] = self._table
            self._caption = None
        elif tag == "table":
            self._table = None
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        self._texts.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._caption is not None:
            self._caption.append(data)
        if self._in_title:
            self.title += data

    @property
    def text(self) -> str:
        return " ".join(" ".join(self._texts).split())


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
    """A figure as a page shows it (thousands separators) back to its exact Decimal."""
    return Decimal(text.replace(",", ""))
