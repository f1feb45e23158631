"""What each agent, campaign and channel consumes: an index per dimension, a page per value."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from dashboards.model import DIMENSIONS, Account, Dimension
from dashboards.pages.common import File
from dashboards.pages.dimension_index import index_file
from dashboards.pages.dimension_value import value_file


def dimension_files(account: Account) -> list[File]:
    files = []
    for dimension in DIMENSIONS:
        data = account.dimensions.get(dimension)
        if data is None:
            continue
        totals = _monthly_totals(data)
        files.extend(index_file(account, data, totals))
        for value in data.values:
            if value.value is not None:
                files.extend(value_file(account, data, value, totals))
    return files


def _monthly_totals(data: Dimension) -> dict[date, Decimal]:
    totals: dict[date, Decimal] = {}
    for value in data.values:
        for usage in value.monthly:
            totals[usage.period] = totals.get(usage.period, Decimal(0)) + usage.consumption
    return totals
