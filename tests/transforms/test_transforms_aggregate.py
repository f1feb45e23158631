"""Statements (identity, DuckDB cross-check) and report aggregates."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.transforms.duck import query
from tests.transforms.ledger_strategies import generic_chains
from tests.transforms.ledgers import Chain, ledger_frame, money, seconds, shuffled
from transforms.aggregate import (
    MOVEMENT_COLUMNS,
    STATEMENT_MONEY_COLUMNS,
    burn_rate,
    consumption_by,
    consumption_totals,
    daily_balance,
    monthly_statement,
    runway,
)
from transforms.continuity import reconcile_continuity
from transforms.micros import MONEY

SOME = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CATEGORY_SQL = """
    CASE
        WHEN t LIKE '%refund%' THEN 'refund'
        WHEN t LIKE '%adjust%' THEN 'adjustment'
        WHEN regexp_matches(t, 'usage|debit|charge|consum') THEN 'debit'
        WHEN regexp_matches(t, 'grant|topup|purchase|credit') THEN 'credit'
        ELSE 'other'
    END
"""

DAILY_SQL = f"""
WITH typed AS (
    SELECT *, lower(regexp_replace(coalesce(entry_type, ''), '[^A-Za-z0-9]', '', 'g')) AS t,
           balance_after - signed_amount AS before_
    FROM ordered
), chained AS (
    SELECT account, chain_position, signed_amount, balance_after, before_,
           {CATEGORY_SQL} AS category,
           CAST(created_at AS DATE) AS day,
           LAG(balance_after) OVER (PARTITION BY account ORDER BY chain_position) AS prev_after
    FROM typed
)
SELECT account, day,
       arg_min(coalesce(prev_after, before_), chain_position) AS opening,
       coalesce(sum(signed_amount) FILTER (WHERE category = 'debit'), 0) AS debits,
       coalesce(sum(signed_amount) FILTER (WHERE category = 'credit'), 0) AS credits,
       coalesce(sum(signed_amount) FILTER (WHERE category = 'refund'), 0) AS refunds,
       coalesce(sum(signed_amount) FILTER (WHERE category = 'adjustment'), 0) AS adjustments,
       coalesce(sum(signed_amount) FILTER (WHERE category = 'other'), 0) AS other,
       coalesce(sum(before_ - prev_after), 0) AS hidden_movements,
       arg_max(balance_after, chain_position) AS closing
FROM chained GROUP BY account, day ORDER BY account, day
"""

MONTHLY_SQL = """
SELECT account, CAST(date_trunc('month', day) AS DATE) AS month,
       arg_min(opening, day) AS opening,
       sum(debits) AS debits, sum(credits) AS credits, sum(refunds) AS refunds,
       sum(adjustments) AS adjustments, sum(other) AS other,
       sum(hidden_movements) AS hidden_movements,
       arg_max(closing, day) AS closing
FROM daily GROUP BY ALL ORDER BY account, month
"""


@st.composite
def reconciled(draw: st.DrawFn) -> pl.DataFrame:
    chains = [draw(generic_chains(account="acme", gap_count=draw(st.integers(0, 3))))]
    if draw(st.booleans()):
        chains.append(draw(generic_chains(account="beta", gap_count=1)))
    frame = shuffled(ledger_frame(*chains), draw(st.integers(0, 2**16)))
    return reconcile_continuity(frame).ordered


def _assert_statement(frame: pl.DataFrame, period: str) -> None:
    assert frame.schema[period] == pl.Date
    for column in STATEMENT_MONEY_COLUMNS:
        assert frame.schema[column] == MONEY
    for account, rows in frame.group_by("account"):
        previous_closing = None
        for row in rows.sort(period).iter_rows(named=True):
            moved = sum((row[c] for c in (*MOVEMENT_COLUMNS, "hidden_movements")), Decimal(0))
            assert row["opening"] + moved == row["closing"], (account, row)
            if previous_closing is not None:
                assert row["opening"] == previous_closing
            previous_closing = row["closing"]


@SOME
@given(reconciled())
def test_statement_identity_holds_every_day_and_month(ordered: pl.DataFrame) -> None:
    daily = daily_balance(ordered)
    _assert_statement(daily, "day")
    monthly = monthly_statement(daily)
    _assert_statement(monthly, "month")
    assert monthly["month"].dt.day().unique().to_list() == [1]


@SOME
@given(reconciled())
def test_daily_and_monthly_equal_an_independent_duckdb_computation(ordered: pl.DataFrame) -> None:
    daily = daily_balance(ordered)
    assert daily.to_dicts() == query(DAILY_SQL, ordered=ordered)
    assert monthly_statement(daily).to_dicts() == query(MONTHLY_SQL, daily=daily)


@SOME
@given(reconciled())
def test_hidden_movements_are_the_continuity_gaps_of_the_later_day(
    ordered: pl.DataFrame,
) -> None:
    result = reconcile_continuity(ordered.drop("signed_amount", "balance_before", "chain_position"))
    gaps = (
        result.breaks.group_by("account", day=pl.col("break_end").dt.date())
        .agg(pl.col("gap").sum())
        .select("account", "day", pl.col("gap").cast(MONEY))
    )
    daily = daily_balance(result.ordered).join(gaps, on=["account", "day"], how="left")
    assert (daily["gap"].fill_null(Decimal(0)) == daily["hidden_movements"]).all()


def test_gap_between_days_opens_the_later_day() -> None:
    chain = Chain(
        money("-1", "-2", "-3"), seconds(0, 86400, 86401), opening=Decimal(10),
        gaps={1: Decimal(5)},
    )  # fmt: skip
    daily = daily_balance(reconcile_continuity(ledger_frame(chain)).ordered)
    first, second = daily.iter_rows(named=True)
    assert (first["opening"], first["closing"], first["hidden_movements"]) == (10, 9, 0)
    assert (second["opening"], second["hidden_movements"], second["debits"]) == (9, 5, -5)
    assert second["closing"] == 9


def _usage_ledger() -> pl.DataFrame:
    chain = Chain(
        amounts=money("-2", "-3", "1", "-4", "100", "-5"),
        opening=Decimal(0),
        offsets=seconds(0, 60, 120, 86400, 86400, 8 * 86400),
        types=["Usage", "Usage", "Refund", "Usage", "TopUp", "Usage"],
        dimensions=[
            ("agt_a", "cmp_x", "Phone"),
            ("agt_b", "cmp_x", "Chat"),
            ("agt_b", "cmp_x", "Chat"),
            ("agt_a", "cmp_y", "Phone"),
            (None, None, None),
            ("agt_a", "cmp_x", "Phone"),
        ],
    )
    return reconcile_continuity(ledger_frame(chain)).ordered


def test_consumption_by_agent_per_day_and_week() -> None:
    by_day = consumption_by(_usage_ledger(), "agent_id")
    assert by_day.columns == [
        "account", "period", "agent_id", "consumption", "refunds", "net_consumption", "entries",
    ]  # fmt: skip
    rows = {(r["period"], r["agent_id"]): r for r in by_day.iter_rows(named=True)}
    day1 = date(2025, 1, 1)
    assert rows[(day1, "agt_b")]["consumption"] == 3
    assert rows[(day1, "agt_b")]["refunds"] == 1
    assert rows[(day1, "agt_b")]["net_consumption"] == 2
    assert rows[(day1 + timedelta(days=1), "agt_a")]["consumption"] == 4
    by_week = consumption_by(_usage_ledger(), ["agent_id", "channel"], grain="week")
    assert by_week["period"].unique().sort().to_list() == [date(2024, 12, 30), date(2025, 1, 6)]
    assert by_week.height == 3


def test_totals_and_shares_per_campaign() -> None:
    totals = consumption_totals(consumption_by(_usage_ledger(), "campaign_id"), "campaign_id")
    assert totals["campaign_id"].to_list() == ["cmp_x", "cmp_y"]
    assert totals["consumption"].to_list() == money("10", "4")
    assert totals["share"].to_list() == [10 / 14, 4 / 14]


def test_burn_rate_and_runway() -> None:
    daily = daily_balance(_usage_ledger())
    per_day = burn_rate(daily)
    assert per_day["burn"].to_list() == money("4", "4", "5")
    per_week = burn_rate(daily, "week")
    assert per_week["burn"].to_list() == money("8", "5")
    result = runway(daily, lookback_days=10).row(0, named=True)
    assert result["balance"] == Decimal(87)
    assert result["avg_daily_burn"] == Decimal("1.3")
    assert result["runway_days"] == Decimal("66.9")
    assert (
        runway(daily, lookback_days=1, as_of=date(2025, 1, 5)).row(0, named=True)["runway_days"]
        is None
    )


def test_runway_is_zero_when_the_balance_is_gone() -> None:
    chain = Chain(money("-5"), seconds(0), opening=Decimal(2))
    daily = daily_balance(reconcile_continuity(ledger_frame(chain)).ordered)
    assert runway(daily).row(0, named=True)["runway_days"] == Decimal(0)
