"""An account at a glance: both balances, findings, burn, forecast, plan limits, statements.

The findings are summed as the reconciliation page sums them (dashboards/pages/findings.py):
hidden movements and breakdown mismatches on lines of their own, never one total. Every table
has its CSV beside it, and the monthly table carries every statement line, so each row adds up
on screen: opening + debits + credits + refunds + adjustments + other + hidden movements
(+ the rounding the screen's 0.01 leaves) = closing.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import polars as pl

from dashboards import figures, paths
from dashboards.csv_files import Name
from dashboards.markup import Html, esc, facts, link, para, section
from dashboards.model import DIMENSIONS, Account, Break
from dashboards.money import money_text, percent_text, percent_value, rounding_difference
from dashboards.pages.balance import balance_facts
from dashboards.pages.common import (
    SITE_CRUMBS,
    TITLES,
    Downloads,
    File,
    month_label,
    page_file,
    when,
)
from dashboards.pages.findings import mismatches_line, movement_brief, movements_line
from dashboards.pages.forecast import forecast_line, forecast_section
from dashboards.pages.history_start import history_line
from dashboards.tables import (
    Cell,
    Column,
    dash_cell,
    link_cell,
    money_cell,
    number_cell,
    numeric_columns,
    text_cell,
)
from transforms.aggregate import STATEMENT_MONEY_COLUMNS, STATEMENT_MOVEMENTS, burn_rate

# Limit name in /Subscription -> what measures its use.
LIMIT_USAGE = {"monthlyCredits": "credits used this period", "agents": "agents with entries"}
MONEY_LIMITS = frozenset({"monthlyCredits"})  # limits in credits: shown as money
STATEMENT_TITLES = (
    "Opening",
    "Debits",
    "Credits",
    "Refunds",
    "Adjustments",
    "Other",
    "Hidden movements",
)


def overview_file(account: Account, key_audit: bool) -> list[File]:
    path = paths.overview(account.name)
    downloads = Downloads(path)
    body: list[Html] = [para(n, "warn") for n in account.notices]
    body.append(_headline(account))
    body.append(_links(account, key_audit, path))
    if account.daily.height:
        body.append(section("Balance", _balance_chart(account), _daily_csv(account, downloads)))
        body.append(section("Burn", *_burn_charts(account.daily)))
    else:
        body.append(para("No reconciled ledger days yet: run `creditlens sync`.", "empty"))
    body.append(forecast_section(account, downloads))
    body.append(section("Plan limits and usage", *_limits(account, downloads)))
    body.append(section("Monthly statements", *_statements(account, path, downloads)))
    page = page_file(
        path, "Overview", body, account=account.name, crumbs=SITE_CRUMBS, charts=True, sortable=True
    )
    return [page, *downloads.files]


def _headline(account: Account) -> Html:
    rows: list[tuple[str, Any]] = [
        *balance_facts(account),
        ("Data as of", when(account.as_of)),
        ("Forecast", forecast_line(account)),
    ]
    if account.subscription is not None:
        sub = account.subscription
        rows.append(("Plan", f"{sub.plan or '—'} ({sub.status or 'status unknown'})"))
    rows.append(("Hidden movements", movements_line(account.breaks)))
    rows.append(("Breakdown mismatches", mismatches_line(account.mismatches)))
    rows.append(("Where the history begins", history_line(account)))
    return facts(rows)


def _links(account: Account, key_audit: bool, here: str) -> Html:
    items = []
    month = account.report_month
    if month is not None and account.statement(month) is not None:
        label = f"Statement {month_label(month)}" + (
            "" if account.report_month_full else " (month to date)"
        )
        items.append(link(paths.relative(here, paths.statement(account.name, month)), label))
    elif month is not None:
        items.append(esc(f"No statement for {month_label(month)}"))
    items.append(link(paths.relative(here, paths.reconciliation(account.name)), "Reconciliation"))
    for dimension in DIMENSIONS:
        if dimension in account.dimensions:
            target = paths.dimension_index(account.name, dimension)
            items.append(link(paths.relative(here, target), TITLES[dimension]))
    if key_audit:
        items.append(link(paths.relative(here, paths.KEY_AUDIT), "API key audit"))
    lis = "".join(f"<li>{item}</li>" for item in items)
    return Html(f'<nav aria-label="Reports"><ul class="links">{lis}</ul></nav>')


def _balance_chart(account: Account) -> Html:
    daily = account.daily
    closing = daily["closing"].to_list()
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "lines",
            "line": {"shape": "hv", "color": "#2454c5"},
            "name": "closing balance",
            "x": figures.axis_dates(daily["day"].to_list()),
            "y": [figures.plot_number(v) for v in closing],
            "customdata": figures.money_hover(closing),
            "hovertemplate": "%{x}: %{customdata} credits<extra>closing</extra>",
        }
    ]
    marks = [(b, at) for b in account.breaks if (at := _mark_at(b)) is not None]
    if marks:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "hidden movement",
                "marker": {"symbol": "x", "size": 11, "color": "#c0392b"},
                "x": [at for _, at in marks],
                "y": [figures.plot_number(b.observed or b.expected) for b, _ in marks],
                "customdata": [_mark_text(b) for b, _ in marks],  # our words: no API text
                "hovertemplate": "%{customdata}<extra></extra>",
            }
        )
    return figures.embed(
        "Balance over time, hidden movements marked",
        data,
        {"yaxis": {"title": {"text": "credits"}}},
    )


def _mark_at(b: Break) -> str | None:
    """Where a movement sits on the time axis: at the entry after it, or, after the last entry,
    on the day the /Consumption balance was read."""
    at = b.break_end or b.observed_on or b.break_start
    return at.isoformat() if at is not None else None


def _mark_text(b: Break) -> str:
    return (
        f"{movement_brief(b)}: between {when(b.break_start)} and "
        f"{when(b.break_end) if b.break_end else when(b.observed_on)}"
    )


def _daily_csv(account: Account, downloads: Downloads) -> Html:
    """The chart's days, every statement column, exact: what a spreadsheet walks day by day."""
    daily = account.daily
    columns = [*STATEMENT_MONEY_COLUMNS, "entries"]
    return downloads.data(
        "daily-balance.csv",
        ("account", "day", *columns),
        ((Name(account.name), *row) for row in daily.select("day", *columns).iter_rows()),
        "the daily balance: opening + movements + hidden movements = closing, every day",
    )


def _burn_charts(daily: pl.DataFrame) -> list[Html]:
    out = []
    for grain, title in (("day", "Burn per day"), ("week", "Burn per week (weeks from Monday)")):
        burn = burn_rate(daily, grain)  # type: ignore[arg-type]
        values = burn["burn"].to_list()
        out.append(
            figures.embed(
                title,
                [
                    {
                        "type": "bar",
                        "x": figures.axis_dates(burn["period"].to_list()),
                        "y": [figures.plot_number(v) for v in values],
                        "customdata": figures.money_hover(values),
                        "hovertemplate": "%{x}: %{customdata} credits<extra></extra>",
                        "marker": {"color": "#e07b00"},
                    }
                ],
                {"yaxis": {"title": {"text": "credits consumed, net of refunds"}}},
            )
        )
    return out


def _limit_rows(account: Account) -> list[tuple[str, Any, Decimal | int | None, str]]:
    """(limit, its value, the usage measured against it, what measures it)."""
    sub = account.subscription
    if sub is None or not sub.limits:
        return []
    rows: list[tuple[str, Any, Decimal | int | None, str]] = []
    for name, limit in sub.limits.items():
        usage: Decimal | int | None = None
        if name == "monthlyCredits" and account.consumption is not None:
            usage = account.consumption.credits_used
        elif name == "agents":
            usage = account.agents_in_period
        rows.append((name, limit, usage, LIMIT_USAGE.get(name, "not measured by creditlens")))
    return rows


def _limits(account: Account, downloads: Downloads) -> list[Html]:
    sub = account.subscription
    if sub is None:
        return [para("No subscription snapshot yet.", "empty")]
    rows = _limit_rows(account)
    intro = para(
        f"From the subscription snapshot of {when(sub.fetched_at)}; billing period "
        f"{when(sub.period_start)} to {when(sub.period_end)}."
    )
    if not rows:
        return [intro, para("The subscription lists no limits.", "empty")]
    consumption = account.consumption
    extra = []
    if consumption is not None and consumption.credits_included is not None:
        used = consumption.credits_used or Decimal(0)
        extra.append(
            para(
                f"/Consumption of {when(consumption.fetched_at)}: {money_text(used)} used of "
                f"{money_text(consumption.credits_included)} included "
                f"({percent_text(used, consumption.credits_included)})."
            )
        )
    measured = [
        (name, limit, usage)
        for name, limit, usage, _ in rows
        if usage is not None and isinstance(limit, int | Decimal) and limit > 0
    ]
    charts = []
    if measured:
        percents = [percent_value(Decimal(u), Decimal(lim)) for _, lim, u in measured]
        charts.append(
            figures.embed(
                "Usage against plan limits (% of the limit)",
                [
                    {
                        "type": "bar",
                        "orientation": "h",
                        "y": [figures.label(n) for n, _, _ in measured],
                        "x": [figures.plot_number(p) for p in percents],
                        "customdata": [
                            f"{_amount(n, u)} of {_amount(n, lim)} "
                            f"({percent_text(Decimal(u), Decimal(lim))})"
                            for n, lim, u in measured
                        ],
                        "hovertemplate": "%{y}: %{customdata}<extra></extra>",
                        "marker": {
                            "color": ["#c0392b" if (p or 0) >= 100 else "#2454c5" for p in percents]
                        },
                    }
                ],
                {
                    "height": 120 + 40 * len(measured),
                    "xaxis": {"title": {"text": "% of limit"}, "rangemode": "tozero"},
                    "yaxis": {"automargin": True},
                    "shapes": [
                        {
                            "type": "line",
                            "x0": 100,
                            "x1": 100,
                            "yref": "paper",
                            "y0": 0,
                            "y1": 1,
                            "line": {"color": "#c0392b", "dash": "dot"},
                        }
                    ],
                },
            )
        )
    table_rows = [
        [
            text_cell(name),
            _limit_cell(name, limit),
            _limit_cell(name, usage) if usage is not None else dash_cell(),
            (
                number_cell(
                    percent_value(Decimal(usage), Decimal(limit)),
                    percent_text(Decimal(usage), Decimal(limit)),
                )
                if usage is not None and isinstance(limit, int | Decimal)
                else dash_cell()
            ),
            text_cell(measure),
        ]
        for name, limit, usage, measure in rows
    ]
    return [
        intro,
        *extra,
        *charts,
        downloads.table(
            "limits.csv",
            "Limits of the current plan",
            [
                Column("Limit"),
                *numeric_columns("Value", "Used", "% used"),
                Column("Measured by"),
            ],
            table_rows,
        ),
    ]


def _amount(name: str, value: Any) -> str:
    """A limit or its usage: credits at the screen's precision, counts as whole numbers."""
    if isinstance(value, bool):
        return str(value)
    if name in MONEY_LIMITS and isinstance(value, Decimal | int):
        return money_text(Decimal(value))
    if isinstance(value, Decimal | int):
        return f"{value:,}"
    return str(value)


def _limit_cell(name: str, value: Any) -> Cell:
    if isinstance(value, Decimal | int) and not isinstance(value, bool):
        if name in MONEY_LIMITS:
            return money_cell(Decimal(value))
        return number_cell(value, _amount(name, value))
    return text_cell(value if value is not None else "unlimited")


def _statements(account: Account, here: str, downloads: Downloads) -> list[Html]:
    """Every month with every statement line; the Rounding column is what showing each amount
    to 0.01 leaves (exactly zero in exact values, so the CSV has no such column)."""
    rows = []
    for s in reversed(account.statements):
        lines = [s.opening, *(s.figure(m) for m in STATEMENT_MOVEMENTS)]
        rows.append(
            [
                link_cell(
                    paths.relative(here, paths.statement(account.name, s.month)),
                    f"{s.month:%Y-%m}",
                ),
                *(money_cell(v) for v in lines),
                money_cell(rounding_difference(lines)),
                money_cell(s.closing),
                number_cell(s.entries),
            ]
        )
    return [
        downloads.table(
            "statements.csv",
            "Every month (click a month for its statement): opening + every movement "
            "(+ rounding) = closing",
            [
                Column("Month"),
                *numeric_columns(*STATEMENT_TITLES),
                Column("Rounding (screen only)", numeric=True, csv=False),
                *numeric_columns("Closing", "Entries"),
            ],
            rows,
            empty="No statement yet.",
        )
    ]
