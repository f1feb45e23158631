"""Where the balance is heading, with its assumptions written beside it.

The arithmetic is transforms/forecast.py's; this module chooses its inputs from what the
warehouse knows (the ledger's last closing, the daily statement's burn, the latest subscription
snapshot's plan and status) and words the result: the burn with the days it was measured over,
the grants assumed and why, no top-ups, and a depletion date only when the projection reaches
zero, otherwise "not before" the horizon's end.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from dashboards import figures
from dashboards.markup import Html, facts, para, section
from dashboards.model import Account
from dashboards.money import money_text, rounding_difference
from dashboards.pages.common import Downloads, when
from dashboards.tables import Column, money_cell, month_cell, numeric_columns
from transforms.forecast import (
    GRANT_LIMIT,
    HORIZON_DAYS,
    WINDOW_DAYS,
    Forecast,
    burn_window,
    plan_grant,
    project_balance,
    projected_months,
)

ASSUMPTIONS = (
    "Assumptions: the burn of the window continues every day; the plan's monthly credits "
    f"({GRANT_LIMIT} of the latest subscription snapshot) arrive at 00:00 UTC on the 1st, "
    "before that day's burn, while the status grants (Active, Trial, Trialing or PastDue, in any "
    "case or spelling; never Cancelled, Suspended, Expired or a status not seen before); no "
    "top-ups, and no expiries, adjustments, promotions or hidden movements. A projection on "
    "those assumptions, not a promise."
)


def monthly_grant(account: Account) -> tuple[Decimal | None, str]:
    """The monthly grant the projection counts on, and why (or why none)."""
    sub = account.subscription
    if sub is None:
        return None, "none assumed: no subscription snapshot"
    amount, why_not = plan_grant(sub.status, sub.limits)
    if amount is None:
        return None, f"none assumed: {why_not}"
    plan = f"plan {sub.plan or '—'}, status {sub.status}, as of {when(sub.fetched_at)}"
    return amount, f"{money_text(amount)} on the 1st of each month ({plan})"


def account_forecast(account: Account) -> Forecast | None:
    """The projection from the ledger's last closing at the data's last day; None without
    ledger days."""
    if not account.daily.height or account.as_of is None:
        return None
    known = account.daily.filter(account.daily["day"] <= account.as_of)
    if not known.height:
        return None
    balance = known["closing"][-1]
    window = burn_window(known, account.as_of, WINDOW_DAYS)
    grant, _ = monthly_grant(account)
    return project_balance(balance, account.as_of, window, grant, HORIZON_DAYS)


def burn_text(forecast: Forecast) -> str:
    window = forecast.window
    return (
        f"{money_text(window.per_day)} credits/day, net of refunds: {money_text(window.burned)} "
        f"over the {window.days} whole UTC days {window.first} to {window.last}"
    )


def depletion_text(forecast: Forecast) -> str:
    if forecast.depleted_now:
        return f"now: the balance is {money_text(forecast.balance)} on {forecast.as_of}"
    if forecast.depletion is not None:
        days = (forecast.depletion - forecast.as_of).days
        return f"{forecast.depletion} ({days:,} days after {forecast.as_of})"
    return (
        f"not before {forecast.horizon_end}: the projection stays above zero for the "
        f"{HORIZON_DAYS} days after {forecast.as_of}"
    )


def forecast_line(account: Account) -> str:
    """The forecast in one line, the same on the site index and the overview's headline."""
    forecast = account_forecast(account)
    if forecast is None:
        return "unknown (no ledger days)"
    if forecast.depleted_now:
        runs_out = "now: the balance is at or below zero"
    elif forecast.depletion is not None:
        runs_out = f"about {forecast.depletion}"
    else:
        runs_out = f"not before {forecast.horizon_end}"
    window = forecast.window
    grant = forecast.monthly_grant
    grants = f"{money_text(grant)} on each 1st" if grant is not None else "none assumed"
    return (
        f"{runs_out} (burn {money_text(window.per_day)}/day net of refunds over "
        f"{window.first}..{window.last}; grants {grants}; no top-ups)"
    )


def forecast_section(account: Account, downloads: Downloads) -> Html:
    forecast = account_forecast(account)
    if forecast is None:
        empty = para("No reconciled ledger days yet: nothing to project.", "empty")
        return section("Forecast", empty)
    _, grants = monthly_grant(account)
    body: list[Html] = [
        facts(
            [
                ("Runs out", depletion_text(forecast)),
                (
                    "Starting balance",
                    f"{money_text(forecast.balance)} (the ledger's closing of {forecast.as_of})",
                ),
                ("Burn", f"{burn_text(forecast)} (the days before {forecast.as_of})"),
                ("Monthly grants", grants),
                ("Top-ups", "none assumed"),
                (
                    "Horizon",
                    f"{forecast.as_of + timedelta(days=1)} to {forecast.horizon_end}",
                ),
            ]
        ),
        para(ASSUMPTIONS),
        _chart(forecast),
        _months_table(forecast, downloads),
    ]
    return section("Forecast", *body)


def _chart(forecast: Forecast) -> Html:
    """The projection through its breakpoints only: the start, the eve and the day of each
    grant, the depletion day and the horizon's end. Between them the balance falls by the same
    burn every day, so the line drawn between breakpoints is the projection, at a few dozen
    points rather than one per day."""
    days = forecast.days
    keep = [
        d
        for i, d in enumerate(days)
        if i == len(days) - 1 or d.grant or days[i + 1].grant or d.day == forecast.depletion
    ]
    points = [(forecast.as_of, forecast.balance), *((d.day, d.closing) for d in keep)]
    closing = [v for _, v in points]
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "lines",
            "line": {"color": "#7a5cc5", "dash": "dot"},
            "name": "projected closing",
            "x": figures.axis_dates([d for d, _ in points]),
            "y": [figures.plot_number(v) for v in closing],
            "customdata": figures.money_hover(closing),
            "hovertemplate": "%{x}: %{customdata} credits<extra>projected</extra>",
        }
    ]
    return figures.embed(
        "Projected balance (assumptions above)",
        data,
        {"yaxis": {"title": {"text": "credits"}, "rangemode": "tozero"}},
    )


def _months_table(forecast: Forecast, downloads: Downloads) -> Html:
    rows = []
    for m in projected_months(forecast):
        parts = (m.opening, m.grants, -m.burn)
        rows.append(
            [
                month_cell(m.month, f"{m.month:%Y-%m}"),
                money_cell(m.opening),
                money_cell(m.grants),
                money_cell(-m.burn),
                money_cell(rounding_difference(parts)),
                money_cell(m.closing),
            ]
        )
    return downloads.table(
        "forecast-months.csv",
        f"Projected balance by month ({forecast.as_of + timedelta(days=1)} to "
        f"{forecast.horizon_end}): opening + grants + burn (+ rounding) = closing",
        [
            Column("Month"),
            *numeric_columns("Opening", "Grants", "Burn"),
            Column("Rounding (screen only)", numeric=True, csv=False),
            Column("Closing", numeric=True),
        ],
        rows,
        empty="Nothing projected.",
    )
