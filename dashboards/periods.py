"""Months: which one a report is about, and the calendar around it (UTC months, as billing)."""

from __future__ import annotations

from datetime import date


def month_start(day: date) -> date:
    return day.replace(day=1)


def add_months(month: date, count: int) -> date:
    index = month.year * 12 + month.month - 1 + count
    return date(index // 12, index % 12 + 1, 1)


def months_between(first: date, last: date) -> list[date]:
    """Every month from ``first``'s to ``last``'s, inclusive."""
    out, month = [], month_start(first)
    while month <= month_start(last):
        out.append(month)
        month = add_months(month, 1)
    return out


def report_month(as_of: date, first_month: date, requested: date | None) -> tuple[date, bool]:
    """The month a report is about, and whether it is over.

    Finance reads the latest full month: the one before ``as_of``'s month (the current month is
    never over, even on its last day, until the data says a later day exists). When the data has
    no full month yet, the report is about the current month to date.
    """
    current = month_start(as_of)
    if requested is not None:
        month = month_start(requested)
        return month, month < current
    previous = add_months(current, -1)
    if previous >= month_start(first_month):
        return previous, True
    return current, False
