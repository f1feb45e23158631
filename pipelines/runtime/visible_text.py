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
"""

from __future__ import annotations

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
