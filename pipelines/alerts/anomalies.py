"""Spend anomalies: which UTC days are judged, against what history, and who contributed.

A day is judged once it is over, on the platform's clock, by the late-entry grace, and every day
since the last one judged is judged, however long the gap (docs/alerts.md says the rule for
users); the maths is transforms/alert_maths.py's.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal

import polars as pl

from pipelines.alerts.observe import EVENT, Evaluated, Observation, credits
from pipelines.alerts.reads import COLUMN, account_row, account_rows, spend_by_day, sync_status
from pipelines.config.alert_rules import Rule
from pipelines.config.settings import ANOMALY_GRACE_HOURS
from pipelines.warehouse.alert_store import NEVER, AlertStore
from transforms.alert_maths import AnomalyScore, spend_anomalies

HISTORY_DAYS = 56  # the 8 same weekdays before a judged day
DEFAULT_GRACE = timedelta(hours=ANOMALY_GRACE_HOURS)


def judge(
    store: AlertStore, rule: Rule, account: str, now: datetime, grace: timedelta, out: Evaluated
) -> None:
    """Each UTC day since the last one judged (``alert_rule_runs.data_day``), however many, up
    to the last day that is over by ``grace`` both now and at the account's last successful
    sync (so its late entries had their time to arrive and were read), on the platform's clock;
    the first evaluation judges only that last day. Whether later entries exist does not
    matter: a runaway agent's last day is judged while nothing follows it."""
    assert rule.min_credits is not None
    span = account_row(
        store, "SELECT account, min(day) AS first FROM daily_balance GROUP BY account", account
    )
    if span is None or span["first"] is None:
        return
    status = sync_status(store, account)
    synced_at = status["last_success_at"] if status else None
    if synced_at is None:
        out.notes.append("no successful sync yet: no day to judge")
        return
    # Days are the platform's: its clock (asOf) may run behind or ahead of this machine's.
    last_day = (min(now, synced_at) - _skew(store) - grace).date() - timedelta(days=1)
    before = store.last_evaluated(rule.name, account)
    if before in (NEVER, None):
        start, out.data_day = last_day, last_day
    else:
        start, out.data_day = before + timedelta(days=1), max(last_day, before)
    if start > last_day or last_day < span["first"]:
        return
    spend = spend_by_day(store, rule, account, start - timedelta(days=HISTORY_DAYS), last_day)
    names = _names(store, account)
    day = start
    while day <= last_day:
        for score in spend_anomalies(spend, day, rule.min_credits, span["first"]):
            if not score.enough_history:
                out.notes.append(
                    f"{rule.dimension} {_named(names, rule.dimension, score.value)} on {day}: "
                    f"fewer than 4 earlier {day:%A}s of data: no verdict (it needs 4 to 8)"
                )
            elif score.anomalous:
                parts = _contributors(store, rule, account, score, span["first"], names)
                out.observations.append(_anomaly(rule, account, score, parts, names))
        day += timedelta(days=1)


def _skew(store: AlertStore) -> timedelta:
    """How far this machine's clock ran ahead of the platform's at the newest stored balance of
    any account (its fetched_at less the platform's asOf): one platform, one clock. An idle
    account's own summary is stored only when it changes, so its own would be stale. None
    stored: no skew."""
    found = store.frame(
        "SELECT epoch(fetched_at) - epoch(as_of) AS seconds FROM consumption_snapshots "
        "WHERE as_of IS NOT NULL ORDER BY fetched_at DESC LIMIT 1"
    )
    seconds = found["seconds"][0] if found.height else None
    return timedelta(seconds=float(seconds)) if seconds is not None else timedelta(0)


def _names(store: AlertStore, account: str) -> dict[str, str]:
    """Campaign names by id, from the latest campaigns snapshot (none before the first)."""
    if "campaigns_current" not in store.tables:
        return {}
    found = account_rows(store, "SELECT account, campaign_id, name FROM campaigns_current", account)
    return {r["campaign_id"]: r["name"] for r in found.iter_rows(named=True) if r["name"]}


def _named(names: dict[str, str], dimension: str, value: str) -> str:
    """A campaign by its name with its id beside it; anything else by its id."""
    name = names.get(value) if dimension == "campaign" else None
    return f"{name} ({value})" if name and name != value else value


# What an anomaly is broken down by, to name what contributed most: agents for an account or
# a campaign or channel, campaigns for an agent.
PARTS = {"account": "agent", "agent": "campaign", "campaign": "agent", "channel": "agent"}


def _contributors(
    store: AlertStore,
    rule: Rule,
    account: str,
    score: AnomalyScore,
    first: date,
    names: dict[str, str],
) -> str:
    """The (at most three) parts whose spend rose most above their own same-weekday median."""
    part = PARTS[rule.dimension]
    value = COLUMN.get(rule.dimension, "account")
    rows = account_rows(
        store,
        f"SELECT account, {value} AS whole, {COLUMN[part]} AS value, entry_day AS day, "
        "sum(net_credits) AS spend FROM consumption WHERE entry_day BETWEEN ? AND ? "
        f"AND {COLUMN[part]} IS NOT NULL GROUP BY ALL",
        account,
        [score.day - timedelta(days=HISTORY_DAYS), score.day],
    )
    rows = rows.filter(pl.col("whole") == score.value).drop("account", "whole")
    rises = [
        (p.spend - p.median, p.value)
        for p in spend_anomalies(rows, score.day, Decimal(0), first)
        if p.median is not None and p.spend > p.median
    ]
    top = sorted(rises, reverse=True)[:3]
    return ", ".join(f"{part} {_named(names, part, name)} +{credits(rise)}" for rise, name in top)


def _anomaly(
    rule: Rule, account: str, score: AnomalyScore, parts: str, names: dict[str, str]
) -> Observation:
    spread = f"score {score.score}" if score.score is not None else "a flat history"
    weeks = len(score.history)
    who = f"{rule.dimension} {_named(names, rule.dimension, score.value)}"
    evidence = (
        f"{who} spent {credits(score.spend)} credits on "
        f"{score.day:%A} {score.day}, against a median of {credits(score.median)} over the same "
        f"weekday of the {weeks} weeks before ({score.spread}; {spread}, cut-off 3.5): "
        f"+{credits(score.impact)} credits" + (f"; most of it: {parts}" if parts else "")
    )
    figures = [
        ("Spent", f"{credits(score.spend)} credits on {score.day:%A} {score.day}"),
        ("Usual", f"{credits(score.median)} credits (median of the same weekday, {weeks} weeks)"),
        ("Above usual", f"+{credits(score.impact)} credits ({spread}, cut-off 3.5)"),
    ]
    if parts:
        figures.append(("Most of it", parts))
    step = (
        f"check what {who} ran on {score.day} (its page on the report site marks the day); if "
        "it was planned, nothing: this notice closes by itself"
    )
    # The day is part of what was anomalous: the site marks it on the value's daily chart.
    value = ("" if rule.dimension == "account" else f"{rule.dimension} {score.value} ") + (
        f"on {score.day}"
    )
    return Observation(
        rule, account, value, score.spend, score.median, EVENT, evidence,
        event=f"{score.day}", present=True, figures=tuple(figures), next_step=step,
    )  # fmt: skip
