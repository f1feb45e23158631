"""Audit texts from outside made safe to show, the same on a terminal and on the report site.

File names, places, key names and server reasons come from outside: every non-printable
character in them is shown as its repr-style escape, so a file name is shown as it is, never
as what it would do (move the cursor, recolour the terminal, reverse the text). Pure: no I/O
and no rendering library, so the report site can use it too.
"""

from __future__ import annotations

from itertools import takewhile
from typing import Protocol


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
