"""Each rule measured against the warehouse: the observations ``state.changes`` compares.

The maths is transforms/alert_maths.py's (and the forecast's); this module chooses its inputs,
the latest platform balance, the daily statement, this month's spend, the open findings, each
account's sync status, and words the evidence a message carries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal

import polars as pl

from pipelines.alerts.observe import EVENT, FIRING, OK, Observation, above, below, credits
from pipelines.config.alert_rules import Rule
from pipelines.warehouse.alert_store import NEVER, AlertStore
from transforms.alert_maths import (
    BUDGET_LEVELS,
    AnomalyScore,
    budget_status,
    runway_days,
    spend_anomalies,
)
from transforms.forecast import plan_grant

COLUMN = {"agent": "agent_id", "campaign": "campaign_id", "channel": "channel"}
MOST_DAYS_BEHIND = 7  # anomaly days evaluated at once after a pause, the latest ones


@dataclass
class Evaluated:
    observations: list[Observation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be judged, and why
    data_day: date | None = None


def evaluate(store: AlertStore, rule: Rule, account: str, now: datetime) -> Evaluated:
    out = Evaluated()
    kind = rule.kind
    if kind == "balance_below":
        _balance(store, rule, account, out)
    elif kind == "runway_below":
        _runway(store, rule, account, out)
    elif kind == "budget":
        _budget(store, rule, account, now.date(), out)
    elif kind == "spend_anomaly":
        _anomalies(store, rule, account, now.date(), out)
    elif kind == "hidden_movement":
        _findings(store, rule, account, out)
    else:
        _syncs(store, rule, account, now, out)
    return out


def _of(store: AlertStore, sql: str, account: str, params: Sequence[object] = ()) -> pl.DataFrame:
    """``account``'s rows of a query over every account: the store keeps each query's answer
    for the evaluation, so 50 accounts ask the warehouse once, not 50 times."""
    return store.frame(sql, params).filter(pl.col("account") == account)


def _one(store: AlertStore, sql: str, account: str) -> dict | None:
    found = _of(store, sql, account)
    return found.row(0, named=True) if found.height else None


def _balance(store: AlertStore, rule: Rule, account: str, out: Evaluated) -> None:
    assert rule.threshold is not None
    snap = _one(
        store,
        "SELECT account, arg_max(balance, fetched_at) AS balance, max(fetched_at) AS fetched_at "
        "FROM consumption_snapshots WHERE shape_ok AND balance IS NOT NULL GROUP BY account",
        account,
    )
    if snap is None:
        out.notes.append("no balance snapshot yet: nothing to compare")
        return
    ledger = _one(
        store,
        "SELECT account, arg_max(closing, day) AS closing, max(day) AS day FROM daily_balance "
        "GROUP BY account",
        account,
    )
    beside = (
        f"; the ledger's closing {credits(ledger['closing'])} on {ledger['day']}" if ledger else ""
    )
    balance = snap["balance"]
    evidence = (
        f"the platform's balance is {credits(balance)} credits "
        f"(as fetched {snap['fetched_at']:%Y-%m-%d %H:%M} UTC), threshold {credits(rule.threshold)}"
        f"{beside}"
    )
    condition = below(balance, rule.threshold, rule.recover_margin)
    out.observations.append(
        Observation(rule, account, None, balance, rule.threshold, condition, evidence)
    )


def _monthly_grant(store: AlertStore, account: str) -> Decimal | None:
    sub = _one(
        store,
        "SELECT account, arg_max(status, fetched_at) AS status, "
        "arg_max(limits, fetched_at) AS limits FROM subscription_snapshots WHERE shape_ok "
        "GROUP BY account",
        account,
    )
    if sub is None or not sub["limits"]:
        return None
    return plan_grant(sub["status"], json.loads(sub["limits"], parse_float=Decimal))[0]


def _runway(store: AlertStore, rule: Rule, account: str, out: Evaluated) -> None:
    assert rule.days is not None
    daily = _of(
        store,
        "SELECT account, day, debits, refunds, closing, entries FROM daily_balance "
        "ORDER BY account, day",
        account,
    )
    if not daily.height:
        out.notes.append("no ledger days yet: no forecast")
        return
    as_of = daily["day"][-1]
    days, depletion, per_day = runway_days(daily, as_of, _monthly_grant(store, account))
    if days is None:
        # The projection never reaches zero in its horizon: silent, and recovered if it fired.
        evidence = f"the forecast stays above zero for a year after {as_of}"
        out.observations.append(Observation(rule, account, None, None, rule.days, OK, evidence))
        return
    evidence = (
        f"at the burn of {credits(per_day)} credits a day (the 28 days before {as_of}), the "
        f"balance reaches zero on {depletion}: {days} days after {as_of}, under {rule.days} days"
    )
    condition = below(Decimal(days), rule.days, rule.recover_margin)
    out.observations.append(
        Observation(rule, account, None, Decimal(days), rule.days, condition, evidence)
    )


def _spend(store: AlertStore, rule: Rule, account: str, first: date, last: date) -> pl.DataFrame:
    value = COLUMN.get(rule.dimension, "account")
    found = _of(
        store,
        f"SELECT account, {value} AS value, entry_day AS day, sum(net_credits) AS spend "
        f"FROM consumption WHERE entry_day BETWEEN ? AND ? AND {value} IS NOT NULL GROUP BY ALL",
        account,
        [first, last],
    ).drop("account")
    if rule.value is not None:
        found = found.filter(pl.col("value") == rule.value)
    return found


def _budget(store: AlertStore, rule: Rule, account: str, today: date, out: Evaluated) -> None:
    limit = rule.monthly_limit
    assert limit is not None
    spend = _spend(store, rule, account, today.replace(day=1), today)
    for status in budget_status(spend, today, limit):
        name = None if rule.dimension == "account" else f"{rule.dimension} {status.value}"
        month = f"{status.month:%B %Y}"
        for level in BUDGET_LEVELS:
            line = limit * level
            evidence = (
                f"{credits(status.spent)} credits spent in {month} to date, "
                f"{credits(status.spent / limit * 100)}% of the monthly limit {credits(limit)}"
            )
            key = f"{level * 100:.0f}%"
            out.observations.append(Observation(
                rule, account, _join(name, key), status.spent, line,
                above(status.spent, line, rule.recover_margin), evidence,
            ))  # fmt: skip
        if status.projected is not None:
            evidence = (
                f"projected {credits(status.projected)} credits for {month}: "
                f"{credits(status.spent_whole_days)} over the {status.whole_days} whole days "
                f"elapsed, times the month's days; the limit is {credits(limit)}"
            )
            out.observations.append(Observation(
                rule, account, _join(name, "projected"), status.projected, limit,
                above(status.projected, limit, rule.recover_margin), evidence,
            ))  # fmt: skip


def _join(name: str | None, level: str) -> str:
    return f"{name} {level}" if name else level


def _anomalies(store: AlertStore, rule: Rule, account: str, today: date, out: Evaluated) -> None:
    """Each whole UTC day since the last evaluation (the last one only, the first time): the
    ledger's days, so a ledger synced up to a day before today is judged on its own last day."""
    assert rule.min_credits is not None
    span = _one(
        store,
        "SELECT account, min(day) AS first, max(day) FILTER (WHERE entries > 0) AS last "
        "FROM daily_balance GROUP BY account",
        account,
    )  # fmt: skip
    if span is None or span["first"] is None:
        return
    last_day = min(today, span["last"]) - timedelta(days=1)
    before = store.last_evaluated(rule.name, account)
    start = last_day if before in (NEVER, None) else before + timedelta(days=1)
    start = max(start, last_day - timedelta(days=MOST_DAYS_BEHIND - 1))
    out.data_day = max(last_day, before) if before not in (NEVER, None) else last_day
    # one range for every account (one query): the days any of them may judge, and 8 weeks more
    spend = _spend(store, rule, account, today - timedelta(days=MOST_DAYS_BEHIND + 57), today)
    day = start
    while day <= last_day:
        for score in spend_anomalies(spend, day, rule.min_credits, span["first"]):
            if not score.enough_history:
                out.notes.append(
                    f"{rule.dimension} {score.value} on {day}: fewer than 4 earlier "
                    f"{day:%A}s of data: no verdict (it needs 4 to 8)"
                )
            elif score.anomalous:
                parts = _contributors(store, rule, account, score, span["first"], today)
                out.observations.append(_anomaly(rule, account, score, parts))
        day += timedelta(days=1)


# What an anomaly is broken down by, to name what contributed most: agents for an account or
# a campaign or channel, campaigns for an agent.
PARTS = {"account": "agent", "agent": "campaign", "campaign": "agent", "channel": "agent"}


def _contributors(
    store: AlertStore, rule: Rule, account: str, score: AnomalyScore, first: date, today: date
) -> str:
    """The (at most three) parts whose spend rose most above their own same-weekday median."""
    part = PARTS[rule.dimension]
    value = COLUMN.get(rule.dimension, "account")
    rows = _of(
        store,
        f"SELECT account, {value} AS whole, {COLUMN[part]} AS value, entry_day AS day, "
        "sum(net_credits) AS spend FROM consumption WHERE entry_day BETWEEN ? AND ? "
        f"AND {COLUMN[part]} IS NOT NULL GROUP BY ALL",
        account,
        [today - timedelta(days=MOST_DAYS_BEHIND + 57), today],
    )
    rows = rows.filter(pl.col("whole") == score.value).drop("account", "whole")
    rises = [
        (p.spend - p.median, p.value)
        for p in spend_anomalies(rows, score.day, Decimal(0), first)
        if p.median is not None and p.spend > p.median
    ]
    top = sorted(rises, reverse=True)[:3]
    return ", ".join(f"{part} {name} +{credits(rise)}" for rise, name in top)


def _anomaly(rule: Rule, account: str, score: AnomalyScore, parts: str) -> Observation:
    spread = f"score {score.score}" if score.score is not None else "a flat history"
    weeks = len(score.history)
    evidence = (
        f"{rule.dimension} {score.value} spent {credits(score.spend)} credits on "
        f"{score.day:%A} {score.day}, against a median of {credits(score.median)} over the same "
        f"weekday of the {weeks} weeks before ({score.spread}; {spread}, cut-off 3.5): "
        f"+{credits(score.impact)} credits" + (f"; most of it: {parts}" if parts else "")
    )
    # The day is part of what was anomalous: the site marks it on the value's daily chart.
    value = ("" if rule.dimension == "account" else f"{rule.dimension} {score.value} ") + (
        f"on {score.day}"
    )
    return Observation(
        rule, account, value, score.spend, score.median, EVENT, evidence,
        event=f"{score.day}", present=True,
    )  # fmt: skip


def _findings(store: AlertStore, rule: Rule, account: str, out: Evaluated) -> None:
    """One event per movement, keyed by the entry it follows and its gap, not by its break_id:
    a first evaluation sends only those of the ledger's last two days (news, not history);
    a movement after the last entry becomes one between entries once later entries arrive, a
    new id for the same movement, which must not be a second alert."""
    if "hidden_movements" not in store.tables:
        return
    found = _of(
        store,
        "SELECT h.account, break_id, observed_on, gap, detail, d.latest, "
        "coalesce(before_entry_id, 'before:' || after_entry_id) AS anchor "
        "FROM hidden_movements h LEFT JOIN (SELECT account, max(day) AS latest "
        "FROM daily_balance GROUP BY account) d ON d.account = h.account "
        "WHERE NOT acknowledged ORDER BY h.account, observed_on",
        account,
    )
    for row in found.iter_rows(named=True):
        evidence = (
            f"a hidden movement of {credits(row['gap'])} credits on {row['observed_on']} "
            f"({row['break_id']}): {row['detail'] or ''}"
        )
        out.observations.append(Observation(
            rule, account, None, row["gap"], None, EVENT, evidence,
            event=f"{row['anchor']}|{row['gap']}",
            present=_recent(row["observed_on"], row["latest"]),
        ))  # fmt: skip


def _recent(day: date | None, latest: date | None) -> bool:
    """Observed on the ledger's last day or the one before: news, not history."""
    return day is not None and latest is not None and day >= latest - timedelta(days=1)


def _syncs(store: AlertStore, rule: Rule, account: str, now: datetime, out: Evaluated) -> None:
    if "account_status" not in store.tables:
        return
    status = _one(
        store,
        "SELECT account, status, last_success_at, last_failure_at, last_failure, "
        "last_failure_sync_id FROM account_status",
        account,
    )
    if status is None:
        return
    if rule.kind == "sync_failed":
        if status["status"] == "failing":
            out.observations.append(Observation(
                rule, account, None, None, None, EVENT, status["last_failure"] or "failed",
                event=status["last_failure_sync_id"],
            ))  # fmt: skip
        return
    assert rule.hours is not None
    since = status["last_success_at"]
    if since is None:
        return
    hours = Decimal(int((now - since).total_seconds() // 60)) / 60
    evidence = (
        f"no successful sync for {credits(hours)} hours (the last ended "
        f"{since:%Y-%m-%d %H:%M} UTC), limit {credits(rule.hours)} hours"
    )
    condition = above(hours, rule.hours, rule.recover_margin)
    out.observations.append(
        Observation(
            rule, account, None, hours.quantize(Decimal("0.01")), rule.hours, condition, evidence
        )
    )


__all__ = ["FIRING", "Evaluated", "evaluate"]
