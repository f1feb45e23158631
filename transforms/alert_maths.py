"""The arithmetic of alerts: spend anomalies, budgets and runway, exact and pure.

Money stays Decimal: a score is compared with its cut-off as a Decimal, never as a float.

Spend anomaly (a robust z-score, Iglewicz and Hoaglin): a whole UTC day's spend ``x`` of one
dimension value against the same weekday of the previous 4 to 8 weeks (seasonality: a Monday is
compared with Mondays). With ``m`` their median and ``MAD`` the median of ``|h - m|``, the score
is ``0.6745 (x - m) / MAD``. When MAD is zero (more than half the history equal) the score uses
the mean absolute deviation instead, ``(x - m) / (1.253314 MeanAD)``; when that is zero too (a
flat history) there is no spread to measure against and any impact counts. Anomalous: score
>= 3.5 and impact ``|x - m|`` >= ``min_credits``. Fewer than 4 earlier same weekdays: no verdict.
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

import polars as pl

from transforms.forecast import WINDOW_DAYS, burn_window, project_balance

MICRO = Decimal("0.000001")
SCORE_CUTOFF = Decimal("3.5")
MAD_FACTOR = Decimal("0.6745")
MEAN_AD_FACTOR = Decimal("1.253314")
MIN_WEEKS = 4
MAX_WEEKS = 8
BUDGET_LEVELS = (Decimal("0.8"), Decimal("1"))


def _median(values: Sequence[Decimal]) -> Decimal:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


@dataclass(frozen=True)
class AnomalyScore:
    """One value's spend on ``day`` against its same-weekday history."""

    value: str
    day: date
    spend: Decimal
    history: tuple[Decimal, ...]  # the same weekday, nearest week first
    median: Decimal | None
    spread: str  # "MAD", "mean absolute deviation", "none (flat history)" or "too few weeks"
    score: Decimal | None  # None: flat history, or too few weeks
    impact: Decimal | None
    anomalous: bool

    @property
    def enough_history(self) -> bool:
        return len(self.history) >= MIN_WEEKS


def score_spend(
    value: str, day: date, spend: Decimal, history: Sequence[Decimal], min_credits: Decimal
) -> AnomalyScore:
    """The verdict for one value; ``history`` holds 0 for a same weekday without spend."""
    history = tuple(history[:MAX_WEEKS])
    if len(history) < MIN_WEEKS:
        return AnomalyScore(value, day, spend, history, None, "too few weeks", None, None, False)
    median = _median(history)
    deviations = [abs(h - median) for h in history]
    impact = abs(spend - median)
    mad = _median(deviations)
    mean_ad = sum(deviations, Decimal(0)) / len(deviations)
    if mad > 0:
        spread, score = "MAD", MAD_FACTOR * (spend - median) / mad
    elif mean_ad > 0:
        spread, score = "mean absolute deviation", (spend - median) / (MEAN_AD_FACTOR * mean_ad)
    else:
        spread, score = "none (flat history)", None
    high = score is None or score >= SCORE_CUTOFF
    anomalous = spend > median and high and impact >= min_credits
    rounded = None if score is None else score.quantize(Decimal("0.01"), ROUND_HALF_EVEN)
    return AnomalyScore(value, day, spend, history, median, spread, rounded, impact, anomalous)


def spend_anomalies(
    spend: pl.DataFrame, day: date, min_credits: Decimal, first_day: date
) -> list[AnomalyScore]:
    """Each value's verdict for ``day``. ``spend`` holds ``value``, ``day`` and ``spend``
    (Decimal) per value and UTC day; a same weekday before ``first_day`` (the account's first
    ledger day) is not history, while one after it without a row spent nothing."""
    weekdays = [day - timedelta(weeks=w) for w in range(1, MAX_WEEKS + 1)]
    weekdays = [d for d in weekdays if d >= first_day]
    today = spend.filter(pl.col("day") == day).group_by("value").agg(pl.col("spend").sum())
    past = (
        spend.filter(pl.col("day").is_in(weekdays))
        .group_by("value", "day")
        .agg(pl.col("spend").sum())
    )
    by_value: dict[str, dict[date, Decimal]] = {}
    for row in past.iter_rows(named=True):
        by_value.setdefault(row["value"], {})[row["day"]] = row["spend"]
    out = []
    for row in today.sort("value").iter_rows(named=True):
        known = by_value.get(row["value"], {})
        history = [known.get(d, Decimal(0)) for d in weekdays]
        out.append(score_spend(row["value"], day, row["spend"], history, min_credits))
    return out


@dataclass(frozen=True)
class BudgetStatus:
    """A value's month to date against its monthly limit."""

    value: str
    month: date
    spent: Decimal  # month to date, today included
    whole_days: int  # whole UTC days elapsed in the month (today excluded)
    spent_whole_days: Decimal
    projected: Decimal | None  # spent_whole_days / whole_days * days of the month
    limit: Decimal

    def share(self) -> Decimal:
        return self.spent / self.limit if self.limit else Decimal(0)


def budget_status(spend: pl.DataFrame, today: date, limit: Decimal) -> list[BudgetStatus]:
    """Month to date per value (``value``, ``day``, ``spend``), and the month's projection:
    the spend of the whole days elapsed over their number, times the days of the month."""
    month = today.replace(day=1)
    days_in_month = calendar.monthrange(today.year, today.month)[1]
    whole_days = today.day - 1
    this_month = spend.filter(pl.col("day").is_between(month, today))
    totals = this_month.group_by("value").agg(
        spent=pl.col("spend").sum(),
        whole=pl.col("spend").filter(pl.col("day") < today).sum(),
    )
    out = []
    for row in totals.sort("value").iter_rows(named=True):
        whole = row["whole"] if row["whole"] is not None else Decimal(0)
        projected = (
            (whole / whole_days * days_in_month).quantize(MICRO, ROUND_HALF_EVEN)
            if whole_days
            else None
        )
        out.append(
            BudgetStatus(row["value"], month, row["spent"], whole_days, whole, projected, limit)
        )
    return out


def runway_days(
    daily: pl.DataFrame, as_of: date, monthly_grant: Decimal | None
) -> tuple[int | None, date | None, Decimal]:
    """Days from ``as_of`` to the forecast's depletion (transforms/forecast.py), the depletion
    day, and the burn per day; None when the projection never reaches zero in its horizon."""
    known = daily.filter(pl.col("day") <= as_of)
    if not known.height:
        return None, None, Decimal(0)
    window = burn_window(known, as_of, WINDOW_DAYS)
    forecast = project_balance(known["closing"][-1], as_of, window, monthly_grant)
    if forecast.depletion is None:
        return None, None, window.per_day
    return (forecast.depletion - as_of).days, forecast.depletion, window.per_day
