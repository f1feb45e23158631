"""JSON text that keeps numbers exact.

The ledger's money arrives as JSON numbers; reading them as float would lose cents. The page
parser keeps each number as its exact text (``JsonNumber``), and ``dumps_exact`` writes such a
structure back with the numbers unquoted, so quarantined and extra fields keep what was sent.

It writes the text itself rather than marking numbers inside strings and unmarking them after
``json.dumps``: any marker is text an API could send in a string of its own, and an entry's text
must never be able to pass for a number (or for anything else) in what we store.
"""

from __future__ import annotations

import json
from typing import Any


class JsonNumber(str):
    """The exact text of a JSON number, so it can be written back unquoted."""

    __slots__ = ()


def dumps_exact(value: Any) -> str:
    """JSON text of a parsed entry with its numbers written back exactly as received.

    Non-ASCII text is written as is; text that is not Unicode (a lone surrogate, which valid JSON
    can carry) makes the whole text use JSON escapes instead, so the result is always encodable
    and still the same data.
    """
    text = _dumps(value, ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError:
        text = _dumps(value, ensure_ascii=True)
    return text


def _dumps(value: Any, *, ensure_ascii: bool) -> str:
    # Loops, not comprehensions: one frame per level of nesting, as json.dumps itself needs, so
    # whatever json.loads could read can be written back.
    if isinstance(value, JsonNumber):
        return str.__str__(value)
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            name = json.dumps(str(key), ensure_ascii=ensure_ascii)
            items.append(f"{name}: {_dumps(item, ensure_ascii=ensure_ascii)}")
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list | tuple):
        parts = []
        for item in value:
            parts.append(_dumps(item, ensure_ascii=ensure_ascii))
        return "[" + ", ".join(parts) + "]"
    return json.dumps(value, ensure_ascii=ensure_ascii)
