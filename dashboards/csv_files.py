"""Every CSV file of the site, written by one rule: what finance pastes into a spreadsheet.

- Numbers are numbers: a Decimal is written as its exact plain text (``-1234.500000``, never
  through float, no grouping), an int as digits, so a spreadsheet reads them as numbers and a
  negative amount stays a negative number. Numbers are never quoted or prefixed.
- Text is inert: a spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
  formula (and some also after a tab or a carriage return), and some read the full-width or
  other look-alike forms (U+FF1D, U+FF0B, U+FF0D, U+FF20: full-width = + - @; U+2212 minus
  sign, hyphens, figure and en dashes) the same way. Text from the API, from configuration or
  our own, is prefixed with a single quote when its first visible character is one of those,
  so a campaign named ``=HYPERLINK(...)`` shows as text. Only text is guarded: the rule is
  chosen by the value's type, never by its look, so ``-12.500000`` the amount stays a number
  and ``-5`` the campaign name becomes ``'-5``.
- Text is shown, never obeyed, and whole: a control or bidi override is written as its escape
  (dashboards/display_text.py's rule), and a name or id the pages cut for display is written
  in full, so the CSV is where the exact value is found.
- Dates are ISO (``2026-03-01``), instants ISO in UTC with microseconds
  (``2026-03-01T12:00:00.123456Z``), flags ``true``/``false``, nothing an empty cell.
- UTF-8 with a byte order mark, so a spreadsheet opened by double-click reads ``é`` and ``日本``
  right, and CRLF line ends, as RFC 4180 and spreadsheets expect.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal

from dashboards.display_text import visible_text
from dashboards.money import decimal_text

BOM = "\ufeff"
# After compatibility normalization (NFKC folds the full-width, small and superscript forms
# to these), a leading character a spreadsheet may run.
_FORMULA_STARTS = frozenset("=+-@")
# Look-alikes NFKC leaves as they are: the minus sign, the hyphens and dashes a number parser
# may take for one (hyphen, non-breaking hyphen, figure dash, en dash), heavy plus and minus,
# modifier plus and minus. Not the em dash: it reads as "nothing", never as a sign.
_LOOK_ALIKES = frozenset("\u2212\u2010\u2011\u2012\u2013\u2795\u2796\u02d6\u02d7")
_CONTROL_STARTS = frozenset("\t\r\n")


class Name(str):
    """A name or id from the API (an agent, a campaign, a channel, an entry): written whole,
    where a table cell shows it cut (kept as a type so callers say what the text is)."""


def _triggers(char: str) -> bool:
    if char in _CONTROL_STARTS or char in _LOOK_ALIKES:
        return True
    return unicodedata.normalize("NFKC", char)[:1] in _FORMULA_STARTS


def spreadsheet_text(text: str) -> str:
    """``text`` as a cell a spreadsheet shows and never runs.

    The first character that is not a space or an invisible format character decides: spaces
    and zero-width characters before an ``=`` do not make it safe. A tab or line break at the
    very start counts too.
    """
    for char in text:
        if _triggers(char):
            return f"'{text}"
        if char.isspace() or unicodedata.category(char) == "Cf":
            continue
        break
    return text


def cell_text(value: object) -> str:
    """One value as CSV cell text, by its type (see the module's rules)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        moment = value.astimezone(UTC) if value.tzinfo else value
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, date):
        return value.isoformat()
    # Whole: a CSV is where finance finds the exact value a page had to cut for display.
    return spreadsheet_text(visible_text(value))


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A whole CSV file: BOM, header, one line per row, CRLF; every cell by ``cell_text``."""
    buffer = io.StringIO()
    buffer.write(BOM)
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([cell_text(name) for name in header])
    for row in rows:
        writer.writerow([cell_text(value) for value in row])
    return buffer.getvalue()
