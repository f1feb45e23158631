"""Where the balance is heading: the recent burn, projected forward with the plan's grants.

Finance asks "when do we run out, and on what assumptions?". Dividing the balance by the burn
answers neither for a company whose monthly grant outweighs its burn: it runs out never, not in
535 days. So the balance is projected day by day, in exact Decimal:

- the burn is net of refunds, ``-(debits + refunds)`` of the daily statement, averaged over a
  stated window of whole UTC days (the ``window_days`` days before the data's last day, which
  may not be over), rounded to the micro-credit;
- the plan's monthly credits (the subscription snapshot's ``limits.monthlyCredits``) arrive at
  00:00 UTC on the 1st of each month, before that day's burn, and only while the subscription's
  status is one that grants (``GRANTING_STATUSES``);
- nothing else moves the balance: no top-ups, expiries, adjustments, promotions or hidden
  movements are assumed.

The depletion date is the first day whose projected closing balance is at or below zero, and
only when the projection reaches zero within the horizon; otherwise there is none, and the
report says "not before" the horizon's last day.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import polars as pl

from transforms.micros import from_micros, to_micros

WINDOW_DAYS = 28
HORIZON_DAYS = 365
MICRO = Decimal("0.000001")
ZERO = Decimal("0.000000")
# Statuses under which the platform keeps granting the monthly credits (compared lower-case,
# without separators). A cancelled, suspended or expired subscription grants nothing, and a
# status nobody has seen is not assumed to grant: a forecast that counts on credits that may
# not come is the wrong way to be wrong.
GRANTING_STATUSES = frozenset({"active", "trialing", "trial", "pastdue"})


def status_grants(status: str | None) -> bool:
    """Whether a subscription in ``status`` receives its monthly credits."""
    if status is None:
        return False
    return "".join(c for c in status.lower() if c.isalnum()) in GRANTING_STATUSES


# The plan's limit a projection counts on as the grant of each 1st (GET /Subscription's limits).
GRANT_LIMIT = "monthlyCredits"


def plan_grant(status: str | None, limits: Mapping[str, Any] | None) -> tuple[Decimal | None, str]:
    """The monthly grant a projection may count on, or None and why not: the report's forecast
    and the runway alert must assume the same grant, or they would disagree on one balance."""
    limit = (limits or {}).get(GRANT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int | Decimal) or limit <= 0:
        return None, f"the plan lists no {GRANT_LIMIT}"
    if not status_grants(status):
        return None, f"status {status or 'unknown'} does not grant"
    return Decimal(limit), ""


@dataclass(frozen=True)
class BurnWindow:
    """The net burn of ``first``..``last`` (inclusive, UTC days) and its daily average."""

    first: date
    last: date
    days: int
    burned: Decimal  # -(debits + refunds) over the window; negative when refunds exceed usage
    per_day: Decimal  # burned / days, rounded half-even to the micro-credit


def burn_window(daily: pl.DataFrame, as_of: date, days: int = WINDOW_DAYS) -> BurnWindow:
    """The burn of the ``days`` whole UTC days before ``as_of`` (whose own day may not be over).

    ``daily`` is the daily statement (``day``, ``debits``, ``refunds``); a day without a row burned
    nothing. Grants, top-ups, adjustments, expiries and hidden movements are not burn.
    """
    if days < 1:
        raise ValueError("a burn window needs at least one day")
    first, last = as_of - timedelta(days=days), as_of - timedelta(days=1)
    burned = (
        daily.filter(pl.col("day").is_between(first, last))
        .select(
            burned=from_micros(-(to_micros(pl.col("debits")) + to_micros(pl.col("refunds"))).sum())
        )
        .item()
    )
    total = ZERO if burned is None else Decimal(burned).quantize(MICRO)
    per_day = (total / days).quantize(MICRO, ROUND_HALF_EVEN)
    return BurnWindow(first, last, days, total, per_day)


@dataclass(frozen=True)
class ProjectedDay:
    """One projected day: the grant that arrives at its start, its burn, its closing balance."""

    day: date
    grant: Decimal
    burn: Decimal
    closing: Decimal


@dataclass(frozen=True)
class Forecast:
    """The balance of ``as_of`` carried forward to ``horizon_end``, and when it reaches zero."""

    as_of: date
    balance: Decimal  # the closing balance the projection starts from
    window: BurnWindow
    monthly_grant: Decimal | None  # None: no grant assumed
    horizon_end: date
    days: tuple[ProjectedDay, ...]
    depletion: date | None  # first day closing at or below zero; as_of when already there

    @property
    def depleted_now(self) -> bool:
        return self.balance <= 0

    @property
    def grants(self) -> Decimal:
        return sum((d.grant for d in self.days), ZERO)


def project_balance(
    balance: Decimal,
    as_of: date,
    window: BurnWindow,
    monthly_grant: Decimal | None,
    horizon_days: int = HORIZON_DAYS,
) -> Forecast:
    """Projects ``balance`` (the closing of ``as_of``) over the next ``horizon_days`` days.

    Each day burns ``window.per_day``; on the 1st of a month ``monthly_grant`` (if any) arrives
    first. Every figure stays a Decimal of at most six places, so a projected balance is exact
    arithmetic on the stated assumptions, never float.
    """
    if horizon_days < 1:
        raise ValueError("a horizon needs at least one day")
    grant = monthly_grant.quantize(MICRO) if monthly_grant and monthly_grant > 0 else None
    depletion = as_of if balance <= 0 else None
    running = balance
    days = []
    for offset in range(1, horizon_days + 1):
        day = as_of + timedelta(days=offset)
        granted = grant if grant is not None and day.day == 1 else ZERO
        running = running + granted - window.per_day
        days.append(ProjectedDay(day, granted, window.per_day, running))
        if depletion is None and running <= 0:
            depletion = day
    return Forecast(
        as_of=as_of,
        balance=balance,
        window=window,
        monthly_grant=grant,
        horizon_end=as_of + timedelta(days=horizon_days),
        days=tuple(days),
        depletion=depletion,
    )


@dataclass(frozen=True)
class ProjectedMonth:
    """A calendar month of the projection (the first may start, the last end, mid-month):
    opening + grants - burn = closing, exactly."""

    month: date
    first: date
    last: date
    opening: Decimal
    grants: Decimal
    burn: Decimal
    closing: Decimal


def projected_months(forecast: Forecast) -> list[ProjectedMonth]:
    """The projection rolled up by month, each opening the previous closing."""
    out: list[ProjectedMonth] = []
    opening = forecast.balance
    current: list[ProjectedDay] = []

    def close() -> None:
        nonlocal opening
        grants = sum((d.grant for d in current), ZERO)
        burn = sum((d.burn for d in current), ZERO)
        closing = current[-1].closing
        month = current[0].day.replace(day=1)
        out.append(
            ProjectedMonth(month, current[0].day, current[-1].day, opening, grants, burn, closing)
        )
        opening = closing

    for day in forecast.days:
        if current and day.day.day == 1:
            close()
            current = []
        current.append(day)
    if current:
        close()
    return out
