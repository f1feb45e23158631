"""The alerts' arithmetic against hand-computed cases (transforms/alert_maths.py)."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import polars as pl

from transforms.alert_maths import budget_status, runway_days, score_spend, spend_anomalies

D = Decimal
MONDAY = date(2026, 11, 23)
# Eight earlier Mondays, nearest first: median 100, deviations 0,10,10,5,5,0,2,2: MAD 3.5.
MONDAYS = [D(100), D(110), D(90), D(105), D(95), D(100), D(102), D(98)]


def _spend(rows: list[tuple[str, date, Decimal]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows, schema={"value": pl.String, "day": pl.Date, "spend": pl.Decimal(18, 6)}, orient="row"
    )


def _seasonal(today: Decimal) -> pl.DataFrame:
    """agent-1 spends 10 a day, but ~100 on Mondays: only Mondays are its Monday's history."""
    rows = []
    for offset in range(1, 8 * 7 + 1):
        day = MONDAY - timedelta(days=offset)
        spend = MONDAYS[offset // 7 - 1] if day.weekday() == 0 else D(10)
        rows.append(("agent-1", day, spend))
    return _spend([*rows, ("agent-1", MONDAY, today)])


def test_a_monday_is_compared_with_mondays_only() -> None:
    (usual,) = spend_anomalies(_seasonal(D(108)), MONDAY, D(20), date(2020, 1, 1))
    assert usual.history == tuple(MONDAYS)
    assert (usual.median, usual.spread) == (D(100), "MAD")
    assert usual.score == D("1.54")  # 0.6745 * 8 / 3.5
    assert not usual.anomalous  # against every day (median 10) it would be


def test_a_spike_is_anomalous_when_its_impact_is_large_enough() -> None:
    (spike,) = spend_anomalies(_seasonal(D(200)), MONDAY, D(50), date(2020, 1, 1))
    assert spike.score == D("19.27")  # 0.6745 * 100 / 3.5
    assert (spike.impact, spike.anomalous) == (D(100), True)
    (small,) = spend_anomalies(_seasonal(D(200)), MONDAY, D(150), date(2020, 1, 1))
    assert not small.anomalous  # impact 100 < min_credits 150


def test_mad_zero_falls_back_to_the_mean_absolute_deviation() -> None:
    scored = score_spend("a", MONDAY, D(100), [D(50), D(50), D(50), D(50), D(90)], D(10))
    # median 50, deviations 0,0,0,0,40: MAD 0, mean 8; (100 - 50) / (1.253314 * 8) = 4.987
    assert (scored.spread, scored.score, scored.anomalous) == (
        "mean absolute deviation",
        D("4.99"),
        True,
    )


def test_a_flat_history_flags_any_impact_of_min_credits() -> None:
    flat = [D(50)] * 4
    assert score_spend("a", MONDAY, D(80), flat, D(20)).anomalous
    quiet = score_spend("a", MONDAY, D(60), flat, D(20))
    assert (quiet.score, quiet.spread, quiet.anomalous) == (None, "none (flat history)", False)
    assert not score_spend("a", MONDAY, D(50), flat, D(0)).anomalous  # no rise at all


def test_fewer_than_four_same_weekdays_says_so() -> None:
    first_day = MONDAY - timedelta(weeks=3)
    (young,) = spend_anomalies(_seasonal(D(1000)), MONDAY, D(1), first_day)
    assert (young.enough_history, young.spread, young.anomalous) == (False, "too few weeks", False)
    # A same weekday after the first day without spend counts as 0, not as missing.
    sparse = _spend([("b", MONDAY - timedelta(weeks=5), D(5)), ("b", MONDAY, D(500))])
    (b,) = spend_anomalies(sparse, MONDAY, D(100), MONDAY - timedelta(weeks=5))
    assert b.history == (D(0), D(0), D(0), D(0), D(5))
    assert b.anomalous


def test_budget_month_to_date_and_projection() -> None:
    today = date(2026, 11, 11)  # November has 30 days; 10 whole days elapsed
    rows = [("acme", date(2026, 11, d), D(10)) for d in range(1, 11)]
    rows += [("acme", today, D(50)), ("acme", date(2026, 10, 31), D(999))]
    (status,) = budget_status(_spend(rows), today, D(250))
    assert (status.spent, status.whole_days, status.spent_whole_days) == (D(150), 10, D(100))
    assert status.projected == D(300)  # 100 / 10 * 30
    assert status.share() == D("0.6")


def test_runway_from_the_forecast() -> None:
    as_of = date(2026, 11, 20)
    days = [as_of - timedelta(days=n) for n in range(28, -1, -1)]
    daily = pl.DataFrame(
        {
            "day": days,
            "debits": [D(-10)] * len(days),
            "refunds": [D(0)] * len(days),
            "closing": [D(1000) + D(10) * (len(days) - 1 - i) for i in range(len(days))],
        },
        schema={
            "day": pl.Date,
            "debits": pl.Decimal(18, 6),
            "refunds": pl.Decimal(18, 6),
            "closing": pl.Decimal(18, 6),
        },
    )
    assert runway_days(daily, as_of, None) == (100, as_of + timedelta(days=100), D(10))
    assert runway_days(daily, as_of, D(1000))[0] is None  # the grant outweighs the burn
