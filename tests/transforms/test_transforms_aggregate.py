"""Statements (identity, DuckDB cross-check) and report aggregates.

The daily statement and burn rate are polars rules (transforms/aggregate). The monthly statement
and consumption per dimension are SQL the warehouse and the report run (the `monthly_statement`
view, dashboards/usage.py), so they are checked on real warehouse files filled by a sync's
landing and reconciliation.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboards import model
from dashboards.money import percent_text
from dashboards.usage import dimension_usage
from pipelines.warehouse.read import frame, open_read_only
from pipelines.warehouse.schema import MONTHLY_STATEMENT
from pipelines.warehouse.writer import Warehouse
from tests.reconciliation.warehouse_ledgers import land_and_reconcile
from tests.transforms.duck import query
from tests.transforms.ledger_strategies import generic_chains
from tests.transforms.ledgers import Chain, ledger_frame, money, seconds, shuffled
from transforms.aggregate import (
    MOVEMENT_COLUMNS,
    STATEMENT_MONEY_COLUMNS,
    burn_rate,
    daily_balance,
)
from transforms.continuity import reconcile_continuity
from transforms.micros import MONEY

# 12 examples each: the whole suite has five minutes on 2 cores, and these are its heaviest.
SOME = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SERIAL = itertools.count()

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


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    """One file for the module: each example lands accounts of its own."""
    wh = Warehouse(
        Path(tmp_path_factory.mktemp("statements")) / "warehouse.duckdb", lock_timeout_s=60
    )
    wh.ensure()
    yield wh


@st.composite
def ledgers(draw: st.DrawFn) -> pl.DataFrame:
    """One or two accounts' ledgers as the API returns them, in any order."""
    chains = [draw(generic_chains(account="acme", gap_count=draw(st.integers(0, 3))))]
    if draw(st.booleans()):
        chains.append(draw(generic_chains(account="beta", gap_count=1)))
    return shuffled(ledger_frame(*chains), draw(st.integers(0, 2**16)))


@st.composite
def reconciled(draw: st.DrawFn) -> pl.DataFrame:
    return reconcile_continuity(draw(ledgers())).ordered


def monthly_statement(warehouse: Warehouse, ledger: pl.DataFrame) -> pl.DataFrame:
    """The `monthly_statement` view after a sync of `ledger`, under its own account names.

    Each call lands the accounts under fresh names, so the examples sharing the module's file
    never see each other's history.
    """
    suffix = f"#{next(SERIAL)}"
    land_and_reconcile(warehouse, ledger.with_columns(pl.col("account") + suffix))
    with open_read_only(warehouse.path, lock_timeout_s=60) as con:
        view = frame(
            con,
            "SELECT * FROM monthly_statement WHERE ends_with(account, ?) ORDER BY account, month",
            [suffix],
        )
    return view.with_columns(pl.col("account").str.strip_suffix(suffix))


def _assert_balanced(statement: pl.DataFrame, period: str) -> None:
    """opening + movements = closing in every period, each opening the previous closing."""
    for account, rows in statement.group_by("account"):
        previous_closing = None
        for row in rows.sort(period).iter_rows(named=True):
            moved = sum((row[c] for c in (*MOVEMENT_COLUMNS, "hidden_movements")), Decimal(0))
            assert row["opening"] + moved == row["closing"], (account, row)
            if previous_closing is not None:
                assert row["opening"] == previous_closing
            previous_closing = row["closing"]


def _assert_statement(statement: pl.DataFrame, period: str) -> None:
    assert statement.schema[period] == pl.Date
    for column in STATEMENT_MONEY_COLUMNS:
        assert statement.schema[column] == MONEY
    _assert_balanced(statement, period)


def test_monthly_statement_has_the_documented_types(warehouse: Warehouse) -> None:
    chain = Chain(money("-1", "-2", "5"), seconds(0, 86400, 40 * 86400), opening=Decimal(10))
    monthly = monthly_statement(warehouse, ledger_frame(chain))
    for column in STATEMENT_MONEY_COLUMNS:
        assert monthly.schema[column] == MONEY, column
    with open_read_only(warehouse.path, lock_timeout_s=60) as con:
        described = dict(
            (name, kind) for name, kind, *_ in con.execute("DESCRIBE monthly_statement").fetchall()
        )
    assert described == {c.name: c.type for c in MONTHLY_STATEMENT.columns}


def _opening_moved(daily: pl.DataFrame) -> pl.DataFrame:
    """The ledger's daily statement as the warehouse keeps it: these ledgers open on a balance
    no entry explains, a movement before the first entry that the first day carries."""
    first = pl.col("day") == pl.col("day").min().over("account")
    return daily.with_columns(
        hidden_movements=pl.when(first)
        .then(pl.col("hidden_movements") + pl.col("opening"))
        .otherwise(pl.col("hidden_movements")),
        opening=pl.when(first).then(pl.lit(Decimal(0)).cast(MONEY)).otherwise(pl.col("opening")),
    )


# One test for the statements' identity and the DuckDB cross-check: both are about the same
# statements of the same drawn ledger, and the monthly one needs a landing and a reconciliation
# (most of an example's cost), which two tests drew and paid for twice.
@SOME
@given(ledger=ledgers())
def test_statements_hold_their_identity_and_equal_an_independent_duckdb_computation(
    warehouse: Warehouse, ledger: pl.DataFrame
) -> None:
    ordered = reconcile_continuity(ledger).ordered
    daily = daily_balance(ordered)
    _assert_statement(daily, "day")
    assert daily.to_dicts() == query(DAILY_SQL, ordered=ordered)
    monthly = monthly_statement(warehouse, ledger)
    assert monthly.schema["month"] == pl.Date
    _assert_balanced(monthly, "month")
    assert monthly["month"].dt.day().unique().to_list() == [1]
    statement = monthly.select("account", "month", *STATEMENT_MONEY_COLUMNS)
    assert statement.to_dicts() == query(MONTHLY_SQL, daily=_opening_moved(daily))
    entries = ledger.group_by(
        "account", month=pl.col("created_at").dt.truncate("1mo").dt.date()
    ).agg(pl.len().alias("entries"))
    counted = monthly.select("account", "month", "entries").join(
        entries, on=["account", "month"], how="full", coalesce=True
    )
    assert (counted["entries"] == counted["entries_right"]).all()


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


JANUARY = date(2025, 1, 1)


def _usage_chain() -> Chain:
    return Chain(
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


def _usage_ledger() -> pl.DataFrame:
    return reconcile_continuity(ledger_frame(_usage_chain())).ordered


@pytest.fixture(scope="module")
def usage_account(warehouse: Warehouse) -> str:
    """The usage ledger synced once under an account of its own: the tests below only read it."""
    account = f"acme#{next(SERIAL)}"
    land_and_reconcile(
        warehouse, ledger_frame(dataclasses.replace(_usage_chain(), account=account))
    )
    return account


def _report_usage(warehouse: Warehouse, account: str, dimension: str) -> model.Dimension:
    """What the report reads for `dimension` after a sync of the usage ledger."""
    with open_read_only(warehouse.path, lock_timeout_s=60) as con:
        return dimension_usage(con, account, dimension, {}, JANUARY)


def test_consumption_by_agent_per_day_and_month(warehouse: Warehouse, usage_account: str) -> None:
    agents = _report_usage(warehouse, usage_account, "agent_id")
    assert [f.name for f in dataclasses.fields(model.Usage)] == [
        "period", "consumption", "refunds", "net", "entries",
    ]  # fmt: skip
    by_value = {v.value: v for v in agents.values}
    assert list(by_value) == ["agt_a", "agt_b"]  # a top-up is no agent's consumption
    days = {(u.period, value): u for value, v in by_value.items() for u in v.daily}
    day1 = JANUARY
    assert days[(day1, "agt_b")].consumption == 3
    assert days[(day1, "agt_b")].refunds == 1
    assert days[(day1, "agt_b")].net == 2
    assert days[(day1, "agt_b")].entries == 1
    assert days[(date(2025, 1, 2), "agt_a")].consumption == 4
    assert {u.period for v in agents.values for u in v.monthly} == {JANUARY}
    assert [(u.consumption, u.refunds, u.entries) for u in by_value["agt_a"].monthly] == [
        (Decimal(11), Decimal(0), 3)
    ]
    # Per agent and channel together: the report's figures beside the other dimensions.
    assert agents.pairs["channel"] == {
        "agt_a": {"Phone": (Decimal(0), Decimal(11))},
        "agt_b": {"Chat": (Decimal(0), Decimal(3))},
    }


def test_totals_and_shares_per_campaign(warehouse: Warehouse, usage_account: str) -> None:
    campaigns = _report_usage(warehouse, usage_account, "campaign_id")
    assert [v.value for v in campaigns.values] == ["cmp_x", "cmp_y"]
    assert [v.total("consumption") for v in campaigns.values] == money("10", "4")
    whole = campaigns.monthly_total(JANUARY)
    assert whole == Decimal(14)
    shares = [v.total("consumption") / whole for v in campaigns.values]
    assert shares == [Decimal(10) / 14, Decimal(4) / 14]
    assert [percent_text(v.total("consumption"), whole) for v in campaigns.values] == [
        "71.4%",
        "28.6%",
    ]


def test_burn_rate_is_net_consumption_per_day_and_week() -> None:
    daily = daily_balance(_usage_ledger())
    per_day = burn_rate(daily)
    assert per_day["burn"].to_list() == money("4", "4", "5")
    per_week = burn_rate(daily, "week")
    assert per_week["burn"].to_list() == money("8", "5")
