"""Text from the API made fit to show: invisible controls made visible, absurd lengths bounded.

Ids and names arrive as the platform sent them: each control and bidi override in them is shown
as its escape, by the one rule of ``pipelines.runtime.visible_text`` (the CLI's error lines use it
too); ``visible_text`` is re-exported here for the site's modules.

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

from pipelines.runtime.visible_text import visible_text

__all__ = [
    "HOVER_LIMIT",
    "NAME_LIMIT",
    "TEXT_LIMIT",
    "display_text",
    "is_cut",
    "value_digest",
    "visible_text",
]

NAME_LIMIT = 80  # a name in a cell, a title, a chart label
HOVER_LIMIT = 1_000  # a tooltip: longer is not read, and it is repeated on every page naming it
TEXT_LIMIT = 2_000  # any text a page shows; the report's own sentences are far shorter

_PARTIAL_ESCAPE = re.compile(r"\\(?:x[0-9a-f]?|u[0-9a-f]{0,3})?$")
_DIGEST_CHARS = 11  # "…" and "[" + 8 hex digits + "]"


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
