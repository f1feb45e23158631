"""JSON text that keeps numbers exact.

The ledger's money arrives as JSON numbers; reading them as float would lose cents. The page
parser keeps each number as its exact text (``JsonNumber``), and ``dumps_exact`` writes such a
structure back with the numbers unquoted, so quarantined and extra fields keep what was sent.
"""

from __future__ import annotations

import json
import re
from typing import Any


class JsonNumber(str):
    """The exact text of a JSON number, so it can be written back unquoted."""

    __slots__ = ()


_MARK = "\u0000n:"
_MARKED = re.compile(r'"\\u0000n:([^"]*)\\u0000"')


def dumps_exact(value: Any) -> str:
    """JSON text of a parsed entry with its numbers written back exactly as received."""

    def mark(v: Any) -> Any:
        if isinstance(v, JsonNumber):
            return f"{_MARK}{v}\u0000"
        if isinstance(v, dict):
            return {k: mark(x) for k, x in v.items()}
        if isinstance(v, list):
            return [mark(x) for x in v]
        return v

    text = json.dumps(mark(value), ensure_ascii=False, sort_keys=False)
    try:
        text.encode()
    except UnicodeEncodeError:  # lone surrogates: keep them as JSON escapes, still the same data
        text = json.dumps(mark(value), ensure_ascii=True, sort_keys=False)
    return _MARKED.sub(r"\1", text)
