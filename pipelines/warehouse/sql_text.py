"""Names and strings spelled into SQL where DuckDB takes no parameter (ATTACH, COPY, a view)."""

from __future__ import annotations

__all__ = ["literal", "quote"]


def quote(name: str) -> str:
    """An identifier, double quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    """A string literal, single quotes doubled."""
    return "'" + text.replace("'", "''") + "'"
