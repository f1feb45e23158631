"""Text from the API made fit to show: invisible controls made visible, absurd lengths bounded.

Ids and names arrive as the platform sent them, and nothing stops it sending a NUL, a terminal
escape or U+202E (RIGHT-TO-LEFT OVERRIDE, which makes ``agt_<RLO>lave`` read ``agt_eval``).
Shown raw, such a character changes what a reader sees instead of being seen, so each is written
as its escape (``\\x00``, ``\\u202e``), the form the key audit already uses for file names on the
same site. A visible escape rather than U+FFFD: two ids differing only by such a character stay
two different-looking ids (credits are attributed by id), and U+FFFD would claim the data was
undecodable when it was not. Characters legitimate text needs are left alone: letters of every
script, emoji joiners, no-break spaces and the implicit direction marks (LRM, RLM), which cannot
reorder what follows them the way overrides, embeddings and isolates do.

Length: one 100 KB campaign id, repeated on every page that names it (cells, sort keys, titles,
chart labels), once made a site of megabytes. A name is shown in at most ``NAME_LIMIT``
characters; a cut one ends with an ellipsis and the short hash of the whole value (the hash its
page's file name carries), so two long ids that share a beginning never merge into one chart
slice or one label. Tooltips show up to ``HOVER_LIMIT`` characters; the value's own page shows
it whole, once; the warehouse keeps it as received.
"""

from __future__ import annotations

import hashlib
import re

NAME_LIMIT = 80  # a name in a cell, a title, a chart label
HOVER_LIMIT = 1_000  # a tooltip: longer is not read, and it is repeated on every page naming it
TEXT_LIMIT = 2_000  # any text a page shows; the report's own sentences are far shorter

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
_PARTIAL_ESCAPE = re.compile(r"\\(?:x[0-9a-f]?|u[0-9a-f]{0,3})?$")
_DIGEST_CHARS = 11  # "…" and "[" + 8 hex digits + "]"


def visible_text(value: object) -> str:
    """``value`` as text with every control and bidi override written as its escape; None as
    the empty text."""
    text = "" if value is None else str(value)
    if text.isprintable():  # no control, format or separator character at all: most text
        return text
    return text.translate(_ESCAPES)


def value_digest(value: object) -> str:
    """The 8-hex-digit hash naming a value: the same as its page's file name ends with."""
    text = "" if value is None else str(value)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


def display_text(value: object, limit: int = NAME_LIMIT) -> str:
    """``visible_text`` of ``value`` in at most ``limit`` characters: a longer one is cut, with
    an ellipsis and the hash of the whole value, never inside an escape."""
    text = visible_text(value)
    if len(text) <= limit:
        return text
    head = _PARTIAL_ESCAPE.sub("", text[: max(limit - _DIGEST_CHARS, 1)])
    return f"{head}…[{value_digest(value)}]"


def is_cut(value: object, limit: int = NAME_LIMIT) -> bool:
    """Whether ``display_text`` shortens ``value``: then a tooltip says more."""
    return len(visible_text(value)) > limit
