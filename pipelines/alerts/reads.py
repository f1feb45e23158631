"""The questions an evaluation asks the warehouse, one query for every account at once.

The store (pipelines/warehouse/alert_store.py) keeps each query's answer for the evaluation, so
50 accounts ask the warehouse once, not 50 times; these pick one account's rows out of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import polars as pl

from pipelines.config.alert_rules import Rule
from pipelines.warehouse.alert_store import AlertStore

COLUMN = {"agent": "agent_id", "campaign": "campaign_id", "channel": "channel"}


def account_rows(
    store: AlertStore, sql: str, account: str, params: Sequence[object] = ()
) -> pl.DataFrame:
    """``account``'s rows of a query over every account: the store keeps each query's answer
    for the evaluation, so 50 accounts ask the warehouse once, not 50 times."""
    return store.frame(sql, params).filter(pl.col("account") == account)


def account_row(store: AlertStore, sql: str, account: str) -> dict | None:
    found = account_rows(store, sql, account)
    return found.row(0, named=True) if found.height else None


def spend_by_day(
    store: AlertStore, rule: Rule, account: str, first: date, last: date
) -> pl.DataFrame:
    value = COLUMN.get(rule.dimension, "account")
    found = account_rows(
        store,
        f"SELECT account, {value} AS value, entry_day AS day, sum(net_credits) AS spend "
        f"FROM consumption WHERE entry_day BETWEEN ? AND ? AND {value} IS NOT NULL GROUP BY ALL",
        account,
        [first, last],
    ).drop("account")
    if rule.value is not None:
        found = found.filter(pl.col("value") == rule.value)
    return found


def sync_status(store: AlertStore, account: str) -> dict | None:
    if "account_status" not in store.tables:
        return None
    return account_row(
        store,
        "SELECT account, status, last_success_at, last_failure_at, last_failure, "
        "last_failure_step FROM account_status",
        account,
    )
