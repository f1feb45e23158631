"""The close rule and the restatement rule, pure: which months close, what a closed month holds,
and what changed when a closed month's figures move.

The figures are the reconciliation's (``monthly_statement``, ``statement_lines``, the enriched
ledger's totals), read as they are: this module never re-derives the balance equation, it only
freezes it and compares one frozen version with the month as it stands now.
"""

from __future__ import annotations

import calendar
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from pipelines.statements.closed import (
    ClosedStatement,
    DimensionTotal,
    LineChange,
    Restatement,
    StatementLine,
)
from transforms.aggregate import STATEMENT_MONEY_COLUMNS
from transforms.entry_type import CATEGORIES

# A category's summary line (statement_lines' category -> monthly_statement's column).
CATEGORY_LINE = dict(zip(CATEGORIES, STATEMENT_MONEY_COLUMNS[1:-2], strict=True))
LATE = "late entries"
HIDDEN = "a hidden movement found in that month"
EARLIER = "an earlier month changed"
RECONCILED = "reconciliation changed"
SIX = Decimal("0.000001")


def last_day(month: date) -> date:
    return month.replace(day=calendar.monthrange(month.year, month.month)[1])


def closable(month: date, covered: date, close_after_days: int) -> bool:
    """A month closes once a sync covered its last day plus the grace period: entries of the
    last day keep arriving for a while after it."""
    return last_day(month) + timedelta(days=close_after_days) <= covered


@dataclass(frozen=True)
class MonthFigures:
    """One account's month as the warehouse has it now (its rows, as read)."""

    account: str
    month: date
    summary: Mapping[str, Any]  # monthly_statement's row: the money columns and entries
    lines: Sequence[tuple[str, str, Decimal, int]]  # (category, entry_type, amount, entries)
    totals: Sequence[tuple[str, str | None, Decimal, int]]  # (dimension, value, amount, entries)


def content_hash(lines: Iterable[StatementLine], totals: Iterable[DimensionTotal]) -> str:
    """Over the figures only (never when they were read), in a fixed order and scale: the same
    month closed twice from the same data hashes the same."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(
            f"L|{line.name}|{line.entry_type or ''}|{line.amount.quantize(SIX)}|{line.entries}\n"
            .encode()
        )  # fmt: skip
    for total in totals:
        value = "\0" if total.value is None else total.value  # None is not the text "None"
        digest.update(
            f"T|{total.dimension}|{value}|{total.amount.quantize(SIX)}|{total.entries}\n".encode()
        )
    return digest.hexdigest()


def statement(
    figures: MonthFigures, version: int, data_as_of: datetime, closed_at: datetime
) -> ClosedStatement:
    """The month's statement: the summary lines in the equation's order, each category's
    entry-type lines after it, and the totals sorted, so equal data gives equal versions."""
    by_category: dict[str, list[tuple[str, Decimal, int]]] = {}
    for category, entry_type, amount, entries in figures.lines:
        by_category.setdefault(category, []).append((entry_type, Decimal(amount), int(entries)))
    lines: list[StatementLine] = []
    for name in STATEMENT_MONEY_COLUMNS:
        category = next((c for c, line in CATEGORY_LINE.items() if line == name), None)
        typed = sorted(by_category.get(category, [])) if category else []
        count = sum(n for _, _, n in typed)
        lines.append(StatementLine(name, Decimal(figures.summary[name]), count))
        # An entry-type line is named by the summary line it makes up ("debits", "Usage").
        lines += [StatementLine(name, a, n, t) for t, a, n in typed]
    totals = tuple(
        sorted(
            (DimensionTotal(d, v, Decimal(a), int(n)) for d, v, a, n in figures.totals),  # type: ignore[arg-type]
            key=lambda t: (t.dimension, t.value is None, t.value or ""),
        )
    )
    return ClosedStatement(
        account=figures.account,
        month=figures.month,
        version=version,
        lines=tuple(lines),
        totals=totals,
        content_hash=content_hash(lines, totals),
        data_as_of=data_as_of,
        closed_at=closed_at,
    )


def _line_key(line: StatementLine) -> str:
    return line.name if line.entry_type is None else f"{line.name} {line.entry_type}"


REMOVED = "entries removed"


def _counted(was: int, now: int) -> str:
    more = now - was
    if more == 0:
        return LATE + " (amounts changed)"
    if now == 0:  # the platform no longer serves the line's entries
        return f"{REMOVED} (all {was})"
    word = "entry" if abs(more) == 1 else "entries"
    return f"{LATE} ({abs(more)} {'more' if more > 0 else 'fewer'} {word})"


def changes(previous: ClosedStatement, current: ClosedStatement) -> tuple[LineChange, ...]:
    """Every figure that moved, line by line, with why. The closing's why is the whys of the
    lines that moved it; an opening moves only when an earlier month did."""
    was = {_line_key(x): x for x in previous.lines}
    now = {_line_key(x): x for x in current.lines}
    found: list[LineChange] = []
    for key in [*was, *(k for k in now if k not in was)]:
        before, after = was.get(key), now.get(key)
        if key in ("opening", "closing"):
            continue
        amount_was = before.amount if before else Decimal(0)
        amount_now = after.amount if after else Decimal(0)
        entries_was = before.entries if before else 0
        entries_now = after.entries if after else 0
        if amount_was == amount_now and entries_was == entries_now:
            continue
        if key == "hidden_movements":
            why = HIDDEN if amount_now != 0 else "a hidden movement of that month no longer found"
        else:
            why = _counted(entries_was, entries_now)
        if amount_was == amount_now:
            # Same amount, other entries (a zero-amount entry arrived): still a change of count.
            counts = Decimal(entries_was), Decimal(entries_now)
            found.append(LineChange(f"{key} entries", *counts, why))
        else:
            found.append(LineChange(key, amount_was, amount_now, why))
    head: list[LineChange] = []
    if previous.line("opening") != current.line("opening"):
        head.append(
            LineChange("opening", previous.line("opening"), current.line("opening"), EARLIER)
        )
    if previous.line("closing") != current.line("closing"):
        whys = "; ".join(dict.fromkeys(c.why for c in [*head, *found])) or RECONCILED
        found.append(LineChange("closing", previous.line("closing"), current.line("closing"), whys))
    found += _total_changes(previous, current)
    return tuple(head + found)


def _total_changes(previous: ClosedStatement, current: ClosedStatement) -> list[LineChange]:
    was = {(t.dimension, t.value): t for t in previous.totals}
    now = {(t.dimension, t.value): t for t in current.totals}
    out = []
    for key in [*was, *(k for k in now if k not in was)]:
        before, after = was.get(key), now.get(key)
        a0, a1 = (before.amount if before else Decimal(0)), (after.amount if after else Decimal(0))
        n0, n1 = (before.entries if before else 0), (after.entries if after else 0)
        if a0 == a1 and n0 == n1:
            continue
        name = f"{key[0]} {key[1] if key[1] is not None else '(none)'}"
        out.append(LineChange(name, a0, a1, _counted(n0, n1) if n0 != n1 else RECONCILED))
    return out


def restated(previous: ClosedStatement, figures: MonthFigures, data_as_of: datetime,
             now: datetime) -> Restatement | None:  # fmt: skip
    """The month's next version when its figures moved since ``previous``; None when the same."""
    current = statement(figures, previous.version + 1, data_as_of, now)
    if current.content_hash == previous.content_hash:
        return None
    return Restatement(previous, current, changes(previous, current))


def first_version(figures: MonthFigures, data_as_of: datetime, now: datetime) -> ClosedStatement:
    return statement(figures, 1, data_as_of, now)


__all__ = [
    "MonthFigures",
    "changes",
    "closable",
    "content_hash",
    "first_version",
    "last_day",
    "restated",
    "statement",
]
