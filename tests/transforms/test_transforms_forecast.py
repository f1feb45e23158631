"""The forecast: burn over a stated window, the balance projected with the plan's grants.

Pure rules (transforms/forecast.py) on small daily statements whose every figure is worked out
by hand here, and once on a daily statement the reconciliation itself computed.
"""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import polars as pl
import pytest

from tests.transforms.ledgers import Chain, ledger_frame, money, seconds
from transforms.aggregate import daily_balance
from transforms.continuity import reconcile_continuity
from transforms.forecast import (
    HORIZON_DAYS,
    burn_window,
    project_balance,
    projected_months,
    status_grants,
)
from transforms.micros import MONEY

AS_OF = date(2026, 4, 15)


def _daily(*days: tuple[date, str, str, str]) -> pl.DataFrame:
    """(day, debits, refunds, closing) rows of a daily statement, signed as the ledger signs."""
    rows = [(d, *(Decimal(v) for v in figures)) for d, *figures in days]
    return pl.DataFrame(
        rows,
        schema={"day": pl.Date, "debits": MONEY, "refunds": MONEY, "closing": MONEY},
        orient="row",
    )


def test_the_window_is_the_whole_days_before_the_last_one_net_of_refunds() -> None:
    daily = _daily(
        (AS_OF - timedelta(days=29), "-1000", "0", "0"),  # before the window
        (AS_OF - timedelta(days=28), "-20", "2", "0"),  # the window's first day
        (AS_OF - timedelta(days=1), "-10.5", "0.5", "0"),  # its last
        (AS_OF, "-999", "0", "0"),  # the data's last day may not be over: not in it
    )
    window = burn_window(daily, AS_OF, 28)
    assert (window.first, window.last, window.days) == (date(2026, 3, 18), date(2026, 4, 14), 28)
    assert window.burned == Decimal("28")  # (20 - 2) + (10.5 - 0.5): refunds are netted
    assert window.per_day == Decimal("1")
    # A repeating average is rounded half-even to the micro-credit, and said to be.
    third = burn_window(_daily((AS_OF - timedelta(days=1), "-10", "0", "0")), AS_OF, 3)
    assert third.per_day == Decimal("3.333333")
    # Nothing in the window: no burn (not "unknown"), and refunds above usage burn negative.
    assert burn_window(daily.clear(), AS_OF).per_day == 0
    assert burn_window(_daily((AS_OF - timedelta(days=2), "-1", "3", "0")), AS_OF, 2).burned == -2


def test_a_grant_many_times_the_burn_never_runs_out_within_the_horizon() -> None:
    """The case the old runway got wrong: 535 days for a balance that rises every month."""
    window = burn_window(_daily((AS_OF - timedelta(days=1), "-1400", "0", "0")), AS_OF, 28)
    assert window.per_day == Decimal("50")
    forecast = project_balance(Decimal("20000"), AS_OF, window, Decimal("10000"))
    assert forecast.depletion is None and not forecast.depleted_now
    assert forecast.horizon_end == AS_OF + timedelta(days=HORIZON_DAYS) == date(2027, 4, 15)
    assert len(forecast.days) == HORIZON_DAYS
    firsts = [d for d in forecast.days if d.day.day == 1]
    assert len(firsts) == 12 and all(d.grant == Decimal("10000") for d in firsts)
    assert forecast.grants == Decimal("120000")
    assert forecast.days[-1].closing == Decimal("20000") + 120000 - 50 * HORIZON_DAYS
    # Without the grant the same burn empties the balance: 20000 / 50 = 400 days, past the
    # horizon; at 100 a day, on the 200th day.
    faster = burn_window(_daily((AS_OF - timedelta(days=1), "-2800", "0", "0")), AS_OF, 28)
    alone = project_balance(Decimal("20000"), AS_OF, faster, None)
    assert alone.depletion == AS_OF + timedelta(days=200)
    assert alone.days[199].closing == 0 and alone.days[198].closing == 100


def test_the_grant_arrives_on_the_first_before_that_days_burn() -> None:
    window = burn_window(_daily((date(2026, 1, 29), "-10", "0", "0")), date(2026, 1, 30), 1)
    forecast = project_balance(Decimal("15"), date(2026, 1, 30), window, Decimal("100"), 3)
    assert [(d.day, d.grant, d.closing) for d in forecast.days] == [
        (date(2026, 1, 31), 0, Decimal("5")),
        (date(2026, 2, 1), Decimal("100"), Decimal("95")),  # not -5 then +100
        (date(2026, 2, 2), 0, Decimal("85")),
    ]
    assert forecast.depletion is None
    no_grant = project_balance(Decimal("15"), date(2026, 1, 30), window, None, 3)
    assert no_grant.depletion == date(2026, 2, 1)


def test_a_balance_already_at_zero_is_depleted_now() -> None:
    window = burn_window(_daily(), AS_OF)
    for balance in (Decimal(0), Decimal("-3.5")):
        forecast = project_balance(balance, AS_OF, window, Decimal("100"))
        assert forecast.depleted_now and forecast.depletion == AS_OF


def test_months_add_up_exactly_and_chain() -> None:
    window = burn_window(_daily((AS_OF - timedelta(days=1), "-10", "0", "0")), AS_OF, 3)
    forecast = project_balance(Decimal("1000.5"), AS_OF, window, Decimal("250"), 60)
    months = projected_months(forecast)
    assert [m.month for m in months] == [date(2026, 4, 1), date(2026, 5, 1), date(2026, 6, 1)]
    assert (months[0].first, months[0].last) == (date(2026, 4, 16), date(2026, 4, 30))
    assert months[-1].last == forecast.horizon_end == date(2026, 6, 14)
    opening = forecast.balance
    for m in months:
        assert m.opening == opening
        assert m.opening + m.grants - m.burn == m.closing  # exactly, no rounding
        opening = m.closing
    assert months[0].burn == Decimal("3.333333") * 15 and months[0].grants == 0
    assert months[1].grants == Decimal("250")
    assert all(isinstance(d.closing, Decimal) for d in forecast.days)
    assert all(-d.closing.as_tuple().exponent <= 6 for d in forecast.days)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("status", "grants"),
    [
        ("Active", True),
        ("active", True),
        ("Trialing", True),
        ("PastDue", True),
        ("past_due", True),
        ("Past due", True),
        ("Cancelled", False),
        ("canceled", False),
        ("Suspended", False),
        ("Expired", False),
        ("SomethingNew", False),
        (None, False),
    ],
)
def test_only_a_status_that_grants_counts_on_the_grant(status: str | None, grants: bool) -> None:
    assert status_grants(status) is grants


def test_bad_windows_and_horizons_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one day"):
        burn_window(_daily(), AS_OF, 0)
    with pytest.raises(ValueError, match="at least one day"):
        project_balance(Decimal(1), AS_OF, burn_window(_daily(), AS_OF), None, 0)


def test_on_a_reconciled_daily_statement() -> None:
    """A ledger through the reconciliation's own daily statement: usage 3 and 4, a refund of 1,
    a top-up (not burn) and a grant (not burn)."""
    chain = Chain(
        money("100", "-3", "-4", "1", "50"),
        seconds(0, 86_400, 2 * 86_400, 2 * 86_400 + 60, 3 * 86_400),
        opening=Decimal(0),
        types=("PlanGrant", "Usage", "Usage", "Refund", "TopUp"),
    )
    daily = daily_balance(reconcile_continuity(ledger_frame(chain)).ordered)
    days = daily["day"].to_list()
    as_of = days[-1] + timedelta(days=1)
    window = burn_window(daily, as_of, 4)
    assert window.burned == Decimal(6) and window.per_day == Decimal("1.5")
    forecast = project_balance(daily["closing"][-1], as_of, window, None, 365)
    assert forecast.balance == Decimal(144)
    assert forecast.depletion == as_of + timedelta(days=96)  # 144 / 1.5
