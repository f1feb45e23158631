"""Consumption per agent, campaign and channel: the report's one definition, in SQL.

The figures are aggregated by DuckDB over `ledger_enriched`, the reconciled ledger with each
entry's category, so the report reads a few rows per day and value, never the entries. Days and
months are UTC. `consumption` is the gross magnitude of debit-category entries (what the
platform's breakdown reports), `refunds` the refunds tied to the same value.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from dashboards import model, periods
from pipelines.warehouse.read import ReadConnection
from pipelines.warehouse.read import rows as _rows  # `rows` is the usual name of its result

_DAY = "CAST(timezone('UTC', created_at) AS DATE)"
_MONTH = f"CAST(date_trunc('month', {_DAY}) AS DATE)"
_USAGE = (
    "coalesce(sum(abs(signed_amount)) FILTER (WHERE category = 'debit'), 0) AS consumption, "
    "coalesce(sum(abs(signed_amount)) FILTER (WHERE category = 'refund'), 0) AS refunds, "
    "count(*) FILTER (WHERE category = 'debit') AS entries"
)
# Top movers compare a value's consumption with another dimension's values, month on month.
Pairs = dict[str | None, dict[str | None, tuple[Decimal, Decimal]]]


def dimension_usage(
    con: ReadConnection,
    account: str,
    dimension: str,
    campaign_names: dict[str, str],
    month: date | None,
) -> model.Dimension:
    """Every value of `dimension` with its usage per day and per month and, when the report is
    about `month`, its consumption beside each value of the other dimensions
    (`model.Dimension.pairs`).

    Only debit- and refund-category entries are usage: grants and top-ups are not what agents
    consume, so they would only add a null value to every dimension.
    """
    base = (
        "FROM ledger_enriched WHERE account = ? AND category IN ('debit', 'refund') "
        "GROUP BY ALL ORDER BY 2, 1"
    )
    daily = _usage(_rows(con, f"SELECT {dimension}, {_DAY}, {_USAGE} {base}", [account]))
    monthly = _usage(_rows(con, f"SELECT {dimension}, {_MONTH}, {_USAGE} {base}", [account]))
    values = []
    for value in sorted(monthly, key=lambda v: (v is None, v or "")):
        shown = value if value is not None else f"(no {model.DIMENSION_NAMES[dimension]})"
        if dimension == "campaign_id" and value is not None:
            shown = campaign_names.get(value) or value
        values.append(model.DimensionValue(value, shown, daily.get(value, []), monthly[value]))
    pairs: dict[str, Pairs] = {}
    if month is not None:
        for other in model.DIMENSIONS:
            if other != dimension:
                pairs[other] = _pairs(con, account, dimension, other, month)
    return model.Dimension(dimension, values, pairs)


def _pairs(con: ReadConnection, account: str, dimension: str, other: str, month: date) -> Pairs:
    """Debit magnitudes per (value, other value): (month before `month`, `month`)."""
    previous = periods.add_months(month, -1)
    rows = _rows(
        con,
        f"SELECT {dimension}, {other}, {_MONTH} AS month, sum(abs(signed_amount)) "
        f"FROM ledger_enriched WHERE account = ? AND category = 'debit' "
        f"AND created_at >= ? AND created_at < ? GROUP BY ALL",
        [account, _utc(previous), _utc(periods.add_months(month, 1))],
    )
    table: Pairs = defaultdict(dict)
    for value, other_value, row_month, amount in rows:
        before, now = table[value].get(other_value, (Decimal(0), Decimal(0)))
        if row_month == month:
            now += amount
        else:
            before += amount
        table[value][other_value] = (before, now)
    return dict(table)


def _usage(rows: list[tuple[Any, ...]]) -> dict[str | None, list[model.Usage]]:
    out: dict[str | None, list[model.Usage]] = defaultdict(list)
    for value, period, consumption, refunds, entries in rows:
        out[value].append(
            model.Usage(period, consumption, refunds, consumption - refunds, int(entries))
        )
    return out


def _utc(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)
