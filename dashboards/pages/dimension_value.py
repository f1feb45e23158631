"""One value of a dimension (an agent, a campaign, a channel): its consumption day by day, its
share of the account month by month, and which values of the other dimensions moved with it."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from dashboards import figures, paths
from dashboards.display_text import is_cut
from dashboards.markup import Html, facts, section, shown_name, whole_text
from dashboards.model import DIMENSION_NAMES, DIMENSIONS, Account, Dimension, DimensionValue
from dashboards.money import money_text, percent_text, percent_value, signed_money_text
from dashboards.pages.common import (
    TITLES,
    Downloads,
    File,
    dimension_crumbs,
    month_label,
    page_file,
    value_title,
)
from dashboards.pages.dimension_common import (
    Mover,
    consumed,
    name_cell,
    ranked_movers,
    report_months,
)
from dashboards.tables import (
    Column,
    money_cell,
    month_cell,
    month_column,
    number_cell,
    numeric_columns,
)


def value_file(
    account: Account, data: Dimension, value: DimensionValue, totals: dict[date, Decimal]
) -> list[File]:
    dimension = data.dimension
    assert value.value is not None
    path = paths.dimension_page(account.name, dimension, value.value)
    downloads = Downloads(path)
    stem = path.rsplit("/", 1)[-1].removesuffix(".html")
    month, previous = report_months(account)
    now = consumed(value, month)
    total_month = totals.get(month, Decimal(0)) if month else Decimal(0)
    all_time = sum(totals.values(), Decimal(0))
    title = value_title(dimension, value.name)
    headline: list[tuple[str, Any]] = []
    if dimension == "campaign_id":
        headline.append(("Campaign id", shown_name(value.value)))
    if month:
        headline += [
            (f"Consumption in {month_label(month)}", money_text(now)),
            (f"Share of the account in {month_label(month)}", percent_text(now, total_month)),
            (
                f"Change from {month_label(previous)}",  # type: ignore[arg-type]
                signed_money_text(now - consumed(value, previous)),
            ),
        ]
    headline += [
        ("All-time consumption", money_text(value.total("consumption"))),
        ("All-time share", percent_text(value.total("consumption"), all_time)),
        ("Refunds", money_text(value.total("refunds"))),
        ("Usage entries", f"{value.entries:,}"),
    ]
    anomalies = account.anomalies.get((dimension, value.value), [])
    body: list[Html] = [
        facts(headline),
        _daily_chart(value, anomalies),
        _share_chart(value, totals),
    ]
    if month and previous:
        for other in DIMENSIONS:
            if other == dimension:
                continue
            movers = _movers_section(account, data, value, other, month, previous, downloads)
            body.append(movers)
    body.append(_periods_table(value, totals, downloads, f"{stem}.csv"))
    body.extend(_whole_names(dimension, value))
    crumbs = dimension_crumbs(account.name, dimension)
    page = page_file(
        path, title, body, account=account.name, crumbs=crumbs, charts=True, sortable=True
    )
    return [page, *downloads.files]


def _daily_chart(value: DimensionValue, anomalies: list[date]) -> Html:
    """Consumption and refunds per day, the days a spend_anomaly alert fired for marked."""
    days = value.daily
    marked = [u for u in days if u.period in anomalies]
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
            *(
                [
                    {
                        "type": "scatter",
                        "mode": "markers",
                        "name": "spend anomaly (alert)",
                        "x": figures.axis_dates([u.period for u in marked]),
                        "y": [figures.plot_number(u.consumption) for u in marked],
                        "customdata": figures.money_hover([u.consumption for u in marked]),
                        "hovertemplate": "%{x}: anomalous spend, %{customdata} credits"
                        "<extra></extra>",
                        "marker": {"color": "#c0392b", "size": 11, "symbol": "triangle-down"},
                    }
                ]
                if marked
                else []
            ),
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
    downloads: Downloads,
) -> Html:
    here = downloads.page
    stem = here.rsplit("/", 1)[-1].removesuffix(".html")
    pairs = data.pairs.get(other, {}).get(value.value, {})
    names = _names(account, other)
    rows: list[Mover] = [
        (other_value, names.get(other_value) or f"(no {DIMENSION_NAMES[other]})", before, now)
        for other_value, (before, now) in pairs.items()
    ]
    noun = DIMENSION_NAMES[other]
    return section(
        f"Top movers by {noun}",
        downloads.table(
            f"{stem}-by-{noun}.csv",
            f"{TITLES[other]} with the largest change, {month_label(previous)} to "
            f"{month_label(month)}",
            [
                Column(noun.capitalize()),
                month_column(previous, "Previous month"),
                month_column(month, "Report month"),
                Column("Change", numeric=True),
            ],
            [
                [
                    name_cell(account, other, other_value, name, here),
                    money_cell(before),
                    money_cell(now),
                    money_cell(now - before, signed_money_text(now - before)),
                ]
                for other_value, name, before, now in ranked_movers(rows)
            ],
            empty="No change between the two months.",
        ),
    )


def _whole_names(dimension: str, value: DimensionValue) -> list[Html]:
    """A name cut everywhere else, whole once, on its own page: the site holds it once, not
    once for every page naming it."""
    noun = DIMENSION_NAMES[dimension]
    names = {f"The {noun}'s name": value.name}
    if value.value != value.name:
        names[f"The {noun}'s id"] = value.value
    return [
        section(
            f"{title}, whole ({len(text):,} characters)",
            Html(
                '<details><summary>Show</summary><p style="overflow-wrap:anywhere">'
                f"{whole_text(text)}</p></details>"
            ),
        )
        for title, text in names.items()
        if text is not None and is_cut(text)
    ]


def _names(account: Account, dimension: str) -> dict[str | None, str]:
    data = account.dimensions.get(dimension)
    return {v.value: v.name for v in data.values} if data else {}


def _periods_table(
    value: DimensionValue, totals: dict[date, Decimal], downloads: Downloads, name: str
) -> Html:
    return section(
        "Figures per month",
        downloads.table(
            name,
            "Consumption per month: consumption - refunds = net",
            [
                Column("Month"),
                *numeric_columns(
                    "Consumption", "Refunds", "Net", "Usage entries", "Share of the account (%)"
                ),
            ],
            [
                [
                    month_cell(u.period, month_label(u.period)),
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
