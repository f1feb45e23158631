"""What a closed statement is, once, for everything that stores, renders or sends it.

A close is frozen: its figures are the month as the data stood at ``data_as_of``, and its
``content_hash`` is over those figures only, so the same data closed twice hashes the same and a
restatement is exactly "the figures changed". Version 1 is the close; each restatement is the
next version, with the line-by-line changes that made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Literal

Dimension = Literal["agent", "campaign", "channel"]


@dataclass(frozen=True)
class StatementLine:
    """One line of the statement: a summary line (``opening``, ``debits`` ... ``closing``, the
    names of ``transforms.aggregate.STATEMENT_MONEY_COLUMNS``) when ``entry_type`` is None, else
    one entry type's movements within its category (the ``statement_lines`` view's rows)."""

    name: str
    amount: Decimal
    entries: int
    entry_type: str | None = None


@dataclass(frozen=True)
class DimensionTotal:
    """The month's movements of one agent, campaign or channel (signed: usage is negative under
    the signed convention); ``value`` None is the entries without one."""

    dimension: Dimension
    value: str | None
    amount: Decimal
    entries: int


@dataclass(frozen=True)
class ClosedStatement:
    account: str
    month: date  # first day of the UTC month
    version: int  # 1: the close; 2, 3, ...: restatements
    lines: tuple[StatementLine, ...]
    totals: tuple[DimensionTotal, ...]
    content_hash: str
    data_as_of: datetime  # the latest sync whose data the figures are (UTC)
    closed_at: datetime  # when this version was recorded (UTC)

    def line(self, name: str) -> Decimal:
        """A summary line's amount (``opening``, ``closing``, ``hidden_movements`` ...)."""
        for line in self.lines:
            if line.entry_type is None and line.name == name:
                return line.amount
        raise KeyError(name)


@dataclass(frozen=True)
class LineChange:
    """One figure of a restated month: what was issued, what it is now, and why it moved."""

    name: str  # the line's name, or "agent agt_1" / "channel voice" for a dimension total
    was: Decimal
    now: Decimal
    why: str  # "late entries", "a hidden movement found in that month", ...

    @property
    def difference(self) -> Decimal:
        return self.now - self.was


@dataclass(frozen=True)
class Restatement:
    previous: ClosedStatement
    current: ClosedStatement
    changes: tuple[LineChange, ...]
