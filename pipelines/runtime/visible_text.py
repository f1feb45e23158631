"""Text from outside made fit to show: invisible controls written as their escapes.

The platform's text (a problem's title and detail, an id, a name, a value it echoes) can carry
a NUL, a newline, a terminal escape or U+202E (RIGHT-TO-LEFT OVERRIDE, which makes
``agt_<RLO>lave`` read ``agt_eval``). Shown raw, such a character changes what a reader sees
instead of being seen: a detail with a newline made one error three lines on the terminal, the
last one reversed. So each is written as its escape (``\\n``, ``\\x1b``, ``\\u202e``), the form
the key audit uses for file names. One rule for the report site (dashboards/display_text.py)
and for the terminal's error lines (``one_line``), so both show the same text the same way.

A visible escape rather than U+FFFD: two ids differing only by such a character stay two
different-looking ids, and U+FFFD would claim the data was undecodable when it was not.
Characters legitimate text needs are left alone: letters of every script, emoji joiners,
no-break spaces and the implicit direction marks (LRM, RLM), which cannot reorder what follows
them the way overrides, embeddings and isolates do. Pure, no imports: every room may use it.

The key audit's texts (file names, places, key names, server reasons) are stricter: every
non-printable character is escaped (``visible``), so a file name is shown as it is, never as
what it would do, the same on a terminal and on the report site (``location_text``).
"""

from __future__ import annotations

from itertools import takewhile
from typing import Protocol

# C0 and C1 controls and DEL; bidi embeddings and overrides (LRE..RLO) and isolates (LRI..PDI);
# the line and paragraph separators, which break lines where no line break is expected.
_CONTROLS = (
    *range(0x00, 0x20),
    *range(0x7F, 0xA0),
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x2028,
    0x2029,
)
_ESCAPES = {code: repr(chr(code))[1:-1] for code in _CONTROLS}


def visible_text(value: object) -> str:
    """``value`` as text with every control and bidi override written as its escape; None as
    the empty text."""
    text = "" if value is None else str(value)
    if text.isprintable():  # no control, format or separator character at all: most text
        return text
    return text.translate(_ESCAPES)


def one_line(text: str) -> str:
    """An error line for the terminal or the Dagster UI: our own message's line breaks and runs
    of blanks become one space (a settings error may span lines), then anything still able to
    act on a terminal (ESC, bidi overrides, NUL) is shown escaped. Outside text should already
    be ``visible_text`` where it entered the message, so its newlines show as ``\\n``."""
    return visible_text(" ".join(text.split()))


# The key audit's texts: every non-printable character escaped, and where a finding is.


def visible(text: object) -> str:
    """``text`` with every non-printable character (ESC, newline, bidi overrides, undecodable
    bytes of a file name) written as its repr-style escape, such as ``\\x1b`` or ``\\u202e``;
    None as the empty text."""
    s = "" if text is None else str(text)
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in s)


class Located(Protocol):
    """Where a finding is, as the audit report and the key_audit_findings rows both hold it."""

    path: str | None
    line: int | None
    column: int | None
    commit: str | None
    encoding: str | None
    place: str | None
    kind: str | None


def location_text(loc: Located) -> str:
    """``path:line:column in commit C (encoding)``, each part only where it is known (a column
    only after a line), or, without a path, the inventory place and its kind ("unknown" when
    none was given)."""
    if loc.path is None:
        return (
            f"inventory place {visible(repr(loc.place or ''))} ({visible(loc.kind or 'unknown')})"
        )
    position = takewhile(lambda n: n is not None, (loc.line, loc.column))
    notes = ((" in commit {}", loc.commit), (" ({})", loc.encoding))
    return (
        visible(loc.path)
        + "".join(f":{n}" for n in position)
        + "".join(form.format(visible(value)) for form, value in notes if value)
    )
