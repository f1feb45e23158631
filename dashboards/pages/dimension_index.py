"""A dimension's index: every value of it ranked by consumption, its share and top movers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal

from dashboards import figures, paths
from dashboards.csv_files import Name
from dashboards.markup import Html, facts, para, section
from dashboards.model import DIMENSION_NAMES, Account, Dimension
from dashboards.money import money_text, percent_text, percent_value, signed_money_text
from dashboards.pages.common import (
    TITLES,
    Downloads,
    File,
    account_crumbs,
    month_label,
    page_file,
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
    dash_cell,
    label_cell,
    money_cell,
    month_column,
    number_cell,
    numeric_columns,
)

PIE_SLICES = 10


def index_file(account: Account, data: Dimension, totals: dict[date, Decimal]) -> list[File]:
    dimension = data.dimension
    path = paths.dimension_index(account.name, dimension)
    downloads = Downloads(path)
    month, previous = report_months(account)
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
                (v.value, v.name, consumed(v, previous), consumed(v, month)) for v in data.values
            ]
            title = f"Top movers: {month_label(previous)} to {month_label(month)}"
            body.append(_movers_chart(title, movers))
        columns = [Column(noun.capitalize())]
        if dimension == "campaign_id":
            columns.append(Column("Campaign id"))
        columns += [
            month_column(month, "Report month"),
            month_column(previous, "Previous month"),
        ]
        columns += numeric_columns(
            "Change",
            "Share (%)",
            "All-time consumption",
            "Refunds",
            "Net",
            "Usage entries",
        )
        rows = []
        ranked = sorted(
            data.values,
            key=lambda v: (-consumed(v, month), -v.total("consumption"), v.name),
        )
        for value in ranked:
            now, before = consumed(value, month), consumed(value, previous)
            row = [name_cell(account, dimension, value.value, value.name, path)]
            if dimension == "campaign_id":
                row.append(label_cell(value.value) if value.value else dash_cell())
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
        plural = TITLES[dimension].lower()
        body.append(
            section(
                f"All {plural}",
                downloads.table(
                    f"{plural}.csv",
                    f"{TITLES[dimension]} by consumption (click a header to sort)",
                    columns,
                    rows,
                ),
                _by_month(account, data, downloads),
            )
        )
    title, crumbs = TITLES[dimension], account_crumbs(account.name)
    charts = bool(data.values and month)
    page = page_file(
        path, title, body, account=account.name, crumbs=crumbs, charts=charts, sortable=True
    )
    return [page, *downloads.files]


def _by_month(account: Account, data: Dimension, downloads: Downloads) -> Html:
    """Every value and month: what finance pivots in a spreadsheet (consumption - refunds =
    net, exactly)."""
    noun = DIMENSION_NAMES[data.dimension]
    return downloads.data(
        f"{TITLES[data.dimension].lower()}-by-month.csv",
        ("account", f"{noun}_id" if noun != "channel" else "channel", f"{noun}_name", "month",
         "consumption", "refunds", "net", "usage_entries"),
        (
            (Name(account.name), _name(v.value), Name(v.name), f"{u.period:%Y-%m}", u.consumption,
             u.refunds, u.net, u.entries)
            for v in data.values
            for u in v.monthly
        ),
        f"every {noun} and month",
    )  # fmt: skip


def _name(value: str | None) -> Name | None:
    return None if value is None else Name(value)


def _share_pie(data: Dimension, month: date, total: Decimal) -> Html:
    ranked = sorted(
        ((v.name, consumed(v, month)) for v in data.values), key=lambda p: p[1], reverse=True
    )
    ranked = [p for p in ranked if p[1] > 0]
    if len(ranked) > PIE_SLICES:
        rest = sum((p[1] for p in ranked[PIE_SLICES - 1 :]), Decimal(0))
        ranked = [*ranked[: PIE_SLICES - 1], ("all others", rest)]
    return figures.embed(
        f"Share of consumption, {month_label(month)}",
        [
            {
                "type": "pie",
                "labels": [figures.label(name) for name, _ in ranked],
                "values": [figures.plot_number(v) for _, v in ranked],
                "customdata": [
                    f"{figures.hover(name)}: {money_text(v)} ({percent_text(v, total)})"
                    for name, v in ranked
                ],
                "hovertemplate": "%{customdata}<extra></extra>",
                "textinfo": "percent",
                "hole": 0.45,
                "sort": False,
            }
        ],
        {"legend": {"orientation": "v"}},
    )


def _movers_chart(title: str, rows: Sequence[Mover]) -> Html:
    movers = list(reversed(ranked_movers(rows)))
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
                "customdata": [
                    f"{figures.hover(name)}: {signed_money_text(c)}"
                    for (_, name, _, _), c in zip(movers, changes, strict=True)
                ],
                "hovertemplate": "%{customdata}<extra></extra>",
                "marker": {"color": ["#c0392b" if c > 0 else "#2f9a55" for c in changes]},
            }
        ],
        {"yaxis": {"automargin": True}, "xaxis": {"title": {"text": "change in credits"}}},
    )
