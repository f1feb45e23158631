"""Checks that what a page shows adds up: on screen to the cent, and in the exact figures.

A page rounds each amount to 0.01 and carries the exact one in the cell's tooltip; statements
show the difference rounding leaves on a "Rounding" line. So a statement's row must add up as
shown, to the cent, rounding line included, and the exact figures must add up exactly without
it. Every table must also have a CSV beside it holding its rows' exact figures.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path

from dashboards.model import STATEMENT_LINES
from tests.dashboards.pages import _Reader, money, read_page
from tests.dashboards.spreadsheets import read_csv

ROUNDING = "Rounding (screen only)"
ROUNDING_LINE = "Rounding (screen only: each amount is shown to 0.01)"
# A figure on screen with three or more decimals: against the one-precision rule.
OVERPRECISE = re.compile(r"(?<![\w.:/-])-?\d[\d,]*\.\d{3,}(?![\w.])")
MONTH_TITLE = re.compile(r"[A-Z][a-z]+ \d{4}")
TWO_DECIMALS = re.compile(r"^[+-]?\d{1,3}(,\d{3})*\.\d{2}$")


def caption(reader: _Reader, prefix: str) -> str:
    """The caption of the page's table that starts with ``prefix``."""
    (found,) = [c for c in reader.tables if c.startswith(prefix)]
    return found


def amount(text: str) -> Decimal:
    """A shown or exact amount; a dash or an empty cell is zero."""
    return Decimal(0) if text in ("", "—") else money(text)


def assert_adds_up(
    reader: _Reader, table: str, parts: Sequence[str], total: str, context: object = None
) -> int:
    """Each row of ``table``: the shown ``parts`` (with the rounding column) add up to the shown
    ``total`` to the cent; the exact parts (without it) to the exact total exactly. Returns how
    many rows needed a non-zero rounding."""
    shown_rows = [
        dict(zip(reader.tables[table][0], r, strict=True)) for r in reader.tables[table][1:]
    ]
    exact_rows = reader.exact(table)
    roundings = 0
    for shown, exact in zip(shown_rows, exact_rows, strict=True):
        on_screen = sum((amount(shown[p]) for p in (*parts, ROUNDING) if p in shown), Decimal(0))
        assert on_screen == amount(shown[total]), (context, table, shown)
        exactly = sum((amount(exact[p]) for p in parts), Decimal(0))
        assert exactly == amount(exact[total]), (context, table, exact)
        if ROUNDING in shown and amount(shown[ROUNDING]):
            roundings += 1
        for name in (*parts, total):
            assert TWO_DECIMALS.match(shown[name]) or shown[name] == "—", (table, name, shown)
    return roundings


def assert_column_adds_up(reader: _Reader, table: str, column: str, context: object = None) -> int:
    """A statement laid out as rows (opening, lines, closing last): the shown amounts above the
    last add up to it to the cent; the exact ones, without the rounding line, exactly."""
    header, *rows = reader.tables[table]
    exact = reader.exact(table)
    index = header.index(column)
    *lines, closing = rows
    assert sum((amount(r[index]) for r in lines), Decimal(0)) == amount(closing[index]), (
        context,
        table,
    )
    exact_lines = [e for e, r in zip(exact[:-1], lines, strict=True) if r[0] != ROUNDING_LINE]
    exact_sum = sum((amount(e[column]) for e in exact_lines), Decimal(0))
    assert exact_sum == amount(exact[-1][column]), (context, table)
    return sum(1 for r in lines if r[0] == ROUNDING_LINE)


def _number(text: str) -> Decimal | None:
    cleaned = text.replace(",", "").removeprefix("+").removesuffix("%")
    try:
        return Decimal(cleaned)
    except InvalidOperation:
        return None


def assert_tables_have_their_csv(page: Path) -> int:
    """Every table of ``page`` links a CSV right below it, with the table's columns (but the
    screen-only rounding) and rows (but the rounding line), every figure the exact one.
    Returns how many tables were checked."""
    reader = read_page(page)
    for table, rows in reader.tables.items():
        assert table in reader.downloads, (page, table)
        csv_path = (page.parent / reader.downloads[table]).resolve()
        header, *body = read_csv(csv_path)
        shown_header = rows[0]
        if shown_header == ["Line", "Amount"] and len(body) == 1:
            _assert_one_row_statement(reader, table, dict(zip(header, body[0], strict=True)))
            continue
        keep = [i for i, title in enumerate(shown_header) if title != ROUNDING]
        assert len(header) == len(keep), (page, table)
        for written_title, i in zip(header, keep, strict=True):
            month = MONTH_TITLE.fullmatch(shown_header[i])
            if month:  # "March 2026" on screen, a header that stays text in a spreadsheet
                iso = datetime.strptime(shown_header[i], "%B %Y").strftime("%Y-%m")
                assert written_title == f"consumption_{iso}", (page, table, written_title)
            else:
                assert written_title == shown_header[i], (page, table, written_title)
        pairs = zip(reader.tables[table][1:], reader.exact(table), strict=True)
        exact = [list(e.values()) for s, e in pairs if s[0] != ROUNDING_LINE]
        assert len(body) == len(exact), (page, table)
        for written, on_page in zip(body, exact, strict=True):
            for column, i in enumerate(keep):
                shown, value = on_page[i], _number(on_page[i])
                if value is not None and _number(written[column]) is not None:
                    assert Decimal(written[column]) == value, (page, table, shown_header[i])
                elif shown == "—":
                    assert written[column] == "", (page, table, shown_header[i])
    return len(reader.tables)


def _assert_one_row_statement(reader: _Reader, table: str, written: dict[str, str]) -> None:
    """A statement's lines, one under the other on the page, one row in its CSV (ready to
    append to a sheet of months): the same exact figures."""
    exact = {r["Line"]: r["Amount"] for r in reader.exact(table)}
    for name, label in STATEMENT_LINES:
        assert Decimal(written[name]) == money(exact[label]), (table, name)


def assert_one_precision(page: Path) -> None:
    """No figure on screen with more than two decimals (exact ones are in tooltips and CSVs)."""
    found = OVERPRECISE.findall(read_page(page).visible)
    assert not found, (page, found[:5])
