"""The daily statement, and the burn rate the report derives from it.

The daily statement is the ledger's own account of each day: the opening balance, the movements
per category, the movements the ledger did not show (hidden_movements), and the closing balance,
with opening + movements + hidden_movements = closing exactly and each opening equal to the
previous closing. Outputs grow with days x dimensions, never with entries.

Location of a hidden movement: the difference between an entry's balance_before and the previous
entry's balance_after belongs to the UTC day of the later entry. A gap between two days thus opens
the later day, and that day's opening is the previous day's closing.

The monthly statement is the `monthly_statement` view over `daily_balance`
(pipelines/warehouse/schema.py) and consumption per agent, campaign and channel is read in SQL by
the report (dashboards/usage.py): one definition each, the one analysts and the report query.
Where the balance is heading (burn over a stated window, grants, depletion) is
transforms/forecast.py.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from transforms.entry_type import CATEGORIES, DEFAULT_RULES, EntryTypeRules, type_meanings
from transforms.micros import from_micros, to_micros

MOVEMENT_COLUMNS: tuple[str, ...] = ("debits", "credits", "refunds", "adjustments", "other")
_CATEGORY_COLUMN = dict(zip(CATEGORIES, MOVEMENT_COLUMNS, strict=True))
# The statement's lines, the one list of them (the warehouse's daily_balance and
# monthly_statement, the site's statement and its CSV follow it): opening + every movement =
# closing, in this order, for a day and for a month.
STATEMENT_MONEY_COLUMNS: tuple[str, ...] = (
    "opening",
    *MOVEMENT_COLUMNS,
    "hidden_movements",
    "closing",
)
# The movements between the opening and the closing: the entries' categories and the hidden ones.
STATEMENT_MOVEMENTS: tuple[str, ...] = STATEMENT_MONEY_COLUMNS[1:-1]
_TRUNCATE: dict[str, str] = {"day": "1d", "week": "1w"}


def daily_balance(ordered: pl.DataFrame, rules: EntryTypeRules = DEFAULT_RULES) -> pl.DataFrame:
    """Per account and UTC day with entries: the statement columns, all Decimal(18,6).

    `ordered` is the reconciled ledger (`chain_position`, `signed_amount`, `balance_before`).
    Hidden movements are computed from the chain itself, so they equal the continuity gaps located
    in the day, plus any difference smaller than a non-zero tolerance; the identity is exact
    either way.
    """
    meanings = type_meanings(ordered["entry_type"], rules).select("entry_type", "category")
    chain = (
        ordered.select(
            "account",
            "created_at",
            "chain_position",
            "entry_type",
            amount=to_micros(pl.col("signed_amount")),
            before=to_micros(pl.col("balance_before")),
            after=to_micros(pl.col("balance_after")),
        )
        .join(meanings, on="entry_type", how="left", nulls_equal=True)
        .sort("account", "chain_position")
        .with_columns(
            day=pl.col("created_at").dt.date(),
            previous_after=pl.when(pl.col("account") == pl.col("account").shift(1)).then(
                pl.col("after").shift(1)
            ),
        )
    )
    movements = [
        pl.col("amount").filter(pl.col("category") == category).sum().alias(column)
        for category, column in _CATEGORY_COLUMN.items()
    ]
    daily = (
        chain.group_by("account", "day", maintain_order=True)
        .agg(
            pl.coalesce(pl.col("previous_after"), pl.col("before")).first().alias("opening"),
            *movements,
            (pl.col("before") - pl.col("previous_after")).sum().alias("hidden_movements"),
            pl.col("after").last().alias("closing"),
        )
        .sort("account", "day")
    )
    return daily.with_columns(
        from_micros(pl.col(c)).alias(c) for c in STATEMENT_MONEY_COLUMNS
    ).select("account", "day", *STATEMENT_MONEY_COLUMNS)


def burn_rate(daily: pl.DataFrame, grain: Literal["day", "week"] = "day") -> pl.DataFrame:
    """Net consumption per account and period: -(debits + refunds), from the daily statement.

    Grants, top-ups, adjustments and expiries are not burn: they are not what agents consume.
    Days without entries have no row (a burn of zero).
    """
    burn = -(to_micros(pl.col("debits")) + to_micros(pl.col("refunds")))
    return (
        daily.group_by("account", period=pl.col("day").dt.truncate(_TRUNCATE[grain]))
        .agg(burn=burn.sum())
        .with_columns(burn=from_micros(pl.col("burn")))
        .sort("account", "period")
    )
