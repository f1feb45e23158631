"""What the index and the value pages of a dimension share: the two months they compare, what a
value consumed in one, and which values moved most between them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal

from dashboards import paths, periods
from dashboards.model import Account, DimensionValue
from dashboards.tables import Cell, label_cell, link_cell

TOP_MOVERS = 10
Mover = tuple[str | None, str, Decimal, Decimal]  # value, name, previous month, report month


def report_months(account: Account) -> tuple[date | None, date | None]:
    month = account.report_month
    return month, periods.add_months(month, -1) if month else None


def consumed(value: DimensionValue, month: date | None) -> Decimal:
    usage = value.month(month) if month else None
    return usage.consumption if usage else Decimal(0)


def name_cell(account: Account, dimension: str, value: str | None, name: str, here: str) -> Cell:
    """A value's name links to its page; the "no campaign" bucket has no page to link to."""
    if value is None:
        return label_cell(name)
    target = paths.dimension_page(account.name, dimension, value)
    return link_cell(paths.relative(here, target), name)


def ranked_movers(rows: Sequence[Mover]) -> list[Mover]:
    """Largest absolute change first; ties by name so the order never depends on the data's."""
    changed = [r for r in rows if r[3] != r[2]]
    return sorted(changed, key=lambda r: (-abs(r[3] - r[2]), r[1], r[0] or ""))[:TOP_MOVERS]
