"""What each agent, campaign and channel consumes: an index per dimension, a page per value."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from dashboards import figures, paths, periods
from dashboards.markup import (
    Cell,
    Column,
    Html,
    facts,
    link_cell,
    money_cell,
    number_cell,
    page,
    para,
    section,
    table,
    text_cell,
)
from dashboards.model import DIMENSION_NAMES, DIMENSIONS, Account, Dimension, DimensionValue
from dashboards.money import money_text, percent_text, percent_value, signed_money_text
from dashboards.pages.common import (
    TITLES,
    File,
    account_crumbs,
    dimension_crumbs,
    month_label,
    value_title,
)

TOP_MOVERS = 10
PIE_SLICES = 10
Mover = tuple[str | None, str, Decimal, Decimal]  # value, name, previous month, report month


def dimension_files(account: Account) -> list[File]:
    files = []
    for dimension in DIMENSIONS:
        data = account.dimensions.get(dimension)
        if data is None:
            continue
        totals = _monthly_totals(data)
        files.append(_index(account, data, totals))
        for value in data.values:
            if value.value is not None:
                files.append(_value_page(account, data, value, totals))
    return files


def _monthly_totals(data: Dimension) -> dict[date, Decimal]:
    totals: dict[date, Decimal] = {}
    for value in data.values:
        for usage in value.monthly:
            totals[usage.period] = totals.get(usage.period, Decimal(0)) + usage.consumption
    return totals


def _months(account: Account) -> tuple[date | None, date | None]:
    month = account.report_month
    return month, periods.add_months(month, -1) if month else None


def _consumed(value: DimensionValue, month: date | None) -> Decimal:
    usage = value.month(month) if month else None
    return usage.consumption if usage else Decimal(0)


def _value_href(account: Account, dimension: str, value: str | None, here: str) -> str | None:
    if value is None:
        return None
    return paths.relative(here, paths.dimension_page(account.name, dimension, value))


def _name_cell(account: Account, dimension: str, value: str | None, name: str, here: str) -> Cell:
    href = _value_href(account, dimension, value, here)
    return link_cell(href, name) if href else text_cell(name)


def _names(account: Account, dimension: str) -> dict[str | None, str]:
    data = account.dimensions.get(dimension)
    return {v.value: v.name for v in data.values} if data else {}


# -- index ------------------------------------------------------------------------------------


def _index(account: Account, data: Dimension, totals: dict[date, Decimal]) -> File:
    dimension = data.dimension
    path = paths.dimension_index(account.name, dimension)
    month, previous = _months(account)
    total = totals.get(month, Decimal(0)) if month else Decimal(0)
    noun = DIMENSION_NAMES[dimension]
    body: list[Html] = [
        para(
            f"Consumption is the gross credits of usage entries tied to each {noun}; refunds tied "
            f"to it are shown beside and netted in 'net'. Report month: "
            + (month_label(month) if month else "none")
            + ("" if account.report_month_full else " (month to date)")
            + "."
        )
    ]
    if not data.values:
        body.append(para(f"No consumption tied to any {noun} yet.", "empty"))
    else:
        body.append(
            facts(
                [
                    (f"{TITLES[dimension]} with consumption", f"{len(data.values):,}"),
                    (
                        f"Consumption in {month_label(month)}" if month else "Consumption",
                        money_text(total),
                    ),
                ]
            )
        )
        if month:
            body.append(_share_pie(data, month, total))
            assert previous is not None
            movers: list[Mover] = [
                (v.value, v.name, _consumed(v, previous), _consumed(v, month)) for v in data.values
            ]
            title = f"Top movers: {month_label(previous)} to {month_label(month)}"
            body.append(_movers_chart(title, movers))
        columns = [Column(noun.capitalize())]
        if dimension == "campaign_id":
            columns.append(Column("Campaign id"))
        columns += [
            Column(f"{month_label(month)}" if month else "Report month", numeric=True),
            Column(f"{month_label(previous)}" if previous else "Previous month", numeric=True),
            Column("Change", numeric=True),
            Column("Share", numeric=True),
            Column("All-time consumption", numeric=True),
            Column("Refunds", numeric=True),
            Column("Net", numeric=True),
            Column("Usage entries", numeric=True),
        ]
        rows = []
        ranked = sorted(
            data.values,
            key=lambda v: (-_consumed(v, month), -v.total("consumption"), v.name),
        )
        for value in ranked:
            now, before = _consumed(value, month), _consumed(value, previous)
            row = [_name_cell(account, dimension, value.value, value.name, path)]
            if dimension == "campaign_id":
                row.append(text_cell(value.value or "—"))
            row += [
                money_cell(now),
                money_cell(before),
                money_cell(now - before, signed_money_text(now - before)),
                number_cell(percent_value(now, total), percent_text(now, total)),
                money_cell(value.total("consumption")),
                money_cell(value.total("refunds")),
                money_cell(value.total("net")),
                number_cell(value.entries),
            ]
            rows.append(row)
        body.append(
            section(
                f"All {TITLES[dimension].lower()}",
                table(
                    f"{TITLES[dimension]} by consumption (click a header to sort)", columns, rows
                ),
            )
        )
    return File(
        path,
        page(
            path=path,
            title=TITLES[dimension],
            account=account.name,
            breadcrumbs=account_crumbs(account.name),
            body=body,
            charts=bool(data.values and month),
            sortable=True,
        ),
    )


def _share_pie(data: Dimension, month: date, total: Decimal) -> Html:
    ranked = sorted(
        ((v.name, _consumed(v, month)) for v in data.values), key=lambda p: p[1], reverse=True
    )
    ranked = [p for p in ranked if p[1] > 0]
    if len(ranked) > PIE_SLICES:
        rest = sum((p[1] for p in ranked[PIE_SLICES - 1 :]), Decimal(0))
        ranked = [*ranked[: PIE_SLICES - 1], ("all others", rest)]
    labels = [figures.label(name) for name, _ in ranked]
    return figures.embed(
        f"Share of consumption, {month_label(month)}",
        [
            {
                "type": "pie",
                "labels": labels,
                "values": [figures.plot_number(v) for _, v in ranked],
                "customdata": [f"{money_text(v)} ({percent_text(v, total)})" for _, v in ranked],
                "hovertemplate": "%{label}: %{customdata}<extra></extra>",
                "textinfo": "percent",
                "hole": 0.45,
                "sort": False,
            }
        ],
        {"legend": {"orientation": "v"}},
    )


def _movers(rows: Sequence[Mover]) -> list[Mover]:
    """Largest absolute change first; ties by name so the order never depends on the data's."""
    changed = [r for r in rows if r[3] != r[2]]
    return sorted(changed, key=lambda r: (-abs(r[3] - r[2]), r[1], r[0] or ""))[:TOP_MOVERS]


def _movers_chart(title: str, rows: Sequence[Mover]) -> Html:
    movers = list(reversed(_movers(rows)))
    if not movers:
        return para("No change between the last two months.", "empty")
    changes = [now - before for _, _, before, now in movers]
    return figures.embed(
        title,
        [
            {
                "type": "bar",
                "orientation": "h",
                "y": [figures.label(name) for _, name, _, _ in movers],
                "x": [figures.plot_number(c) for c in changes],
                "customdata": [signed_money_text(c) for c in changes],
                "hovertemplate": "%{y}: %{customdata}<extra></extra>",
                "marker": {"color": ["#c0392b" if c > 0 else "#2f9a55" for c in changes]},
            }
        ],
        {"yaxis": {"automargin": True}, "xaxis": {"title": {"text": "change in credits"}}},
    )


# -- one value --------------------------------------------------------------------------------


def _value_page(
    account: Account, data: Dimension, value: DimensionValue, totals: dict[date, Decimal]
) -> File:
    dimension = data.dimension
    assert value.value is not None
    path = paths.dimension_page(account.name, dimension, value.value)
    month, previous = _months(account)
    now = _consumed(value, month)
    total_month = totals.get(month, Decimal(0)) if month else Decimal(0)
    all_time = sum(totals.values(), Decimal(0))
    title = value_title(dimension, value.name)
    headline: list[tuple[str, Any]] = []
    if dimension == "campaign_id":
        headline.append(("Campaign id", value.value))
    if month:
        headline += [
            (f"Consumption in {month_label(month)}", money_text(now)),
            (f"Share of the account in {month_label(month)}", percent_text(now, total_month)),
            (
                f"Change from {month_label(previous)}",  # type: ignore[arg-type]
                signed_money_text(now - _consumed(value, previous)),
            ),
        ]
    headline += [
        ("All-time consumption", money_text(value.total("consumption"))),
        ("All-time share", percent_text(value.total("consumption"), all_time)),
        ("Refunds", money_text(value.total("refunds"))),
        ("Usage entries", f"{value.entries:,}"),
    ]
    body: list[Html] = [facts(headline), _daily_chart(value), _share_chart(value, totals)]
    if month and previous:
        for other in DIMENSIONS:
            if other == dimension:
                continue
            body.append(_movers_section(account, data, value, other, month, previous, path))
    body.append(_periods_table(value, totals))
    return File(
        path,
        page(
            path=path,
            title=title,
            account=account.name,
            breadcrumbs=dimension_crumbs(account.name, dimension),
            body=body,
            charts=True,
            sortable=True,
        ),
    )


def _daily_chart(value: DimensionValue) -> Html:
    days = value.daily
    return figures.embed(
        "Consumption per day",
        [
            {
                "type": "bar",
                "name": "consumption",
                "x": figures.axis_dates([u.period for u in days]),
                "y": [figures.plot_number(u.consumption) for u in days],
                "customdata": figures.money_hover([u.consumption for u in days]),
                "hovertemplate": "%{x}: %{customdata} credits<extra></extra>",
                "marker": {"color": "#2454c5"},
            },
            {
                "type": "bar",
                "name": "refunds",
                "x": figures.axis_dates([u.period for u in days if u.refunds]),
                "y": [-figures.plot_number(u.refunds) for u in days if u.refunds],  # type: ignore[operator]
                "customdata": figures.money_hover([u.refunds for u in days if u.refunds]),
                "hovertemplate": "%{x}: %{customdata} refunded<extra></extra>",
                "marker": {"color": "#2f9a55"},
            },
        ],
        {"barmode": "relative", "yaxis": {"title": {"text": "credits"}}},
    )


def _share_chart(value: DimensionValue, totals: dict[date, Decimal]) -> Html:
    months = value.monthly
    shares = [percent_value(u.consumption, totals.get(u.period, Decimal(0))) for u in months]
    return figures.embed(
        "Share of the account's consumption per month",
        [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": figures.axis_dates([u.period for u in months]),
                "y": [figures.plot_number(s) for s in shares],
                "customdata": [
                    percent_text(u.consumption, totals.get(u.period, Decimal(0))) for u in months
                ],
                "hovertemplate": "%{x|%B %Y}: %{customdata}<extra></extra>",
            }
        ],
        {
            "yaxis": {"title": {"text": "% of consumption"}, "rangemode": "tozero"},
            "xaxis": {"tickformat": "%b %Y", "dtick": "M1"},
        },
    )


def _movers_section(
    account: Account,
    data: Dimension,
    value: DimensionValue,
    other: str,
    month: date,
    previous: date,
    here: str,
) -> Html:
    pairs = data.pairs.get(other, {}).get(value.value, {})
    names = _names(account, other)
    rows: list[Mover] = [
        (other_value, names.get(other_value) or f"(no {DIMENSION_NAMES[other]})", before, now)
        for other_value, (before, now) in pairs.items()
    ]
    noun = DIMENSION_NAMES[other]
    return section(
        f"Top movers by {noun}",
        table(
            f"{TITLES[other]} with the largest change, {month_label(previous)} to "
            f"{month_label(month)}",
            [
                Column(noun.capitalize()),
                Column(month_label(previous), numeric=True),
                Column(month_label(month), numeric=True),
                Column("Change", numeric=True),
            ],
            [
                [
                    _name_cell(account, other, other_value, name, here),
                    money_cell(before),
                    money_cell(now),
                    money_cell(now - before, signed_money_text(now - before)),
                ]
                for other_value, name, before, now in _movers(rows)
            ],
            empty="No change between the two months.",
        ),
    )


def _periods_table(value: DimensionValue, totals: dict[date, Decimal]) -> Html:
    return section(
        "Figures per month",
        table(
            "Consumption per month",
            [
                Column("Month"),
                Column("Consumption", numeric=True),
                Column("Refunds", numeric=True),
                Column("Net", numeric=True),
                Column("Usage entries", numeric=True),
                Column("Share of the account", numeric=True),
            ],
            [
                [
                    Cell(text_cell(month_label(u.period)).shown, u.period.isoformat()),
                    money_cell(u.consumption),
                    money_cell(u.refunds),
                    money_cell(u.net),
                    number_cell(u.entries),
                    number_cell(
                        percent_value(u.consumption, totals.get(u.period, Decimal(0))),
                        percent_text(u.consumption, totals.get(u.period, Decimal(0))),
                    ),
                ]
                for u in reversed(value.monthly)
            ],
        ),
    )
