"""Each rule measured against the warehouse: the observations ``state.changes`` compares.

The maths is transforms/alert_maths.py's (and the forecast's); this module chooses its inputs,
the latest platform balance, the daily statement, this month's spend, the open findings, each
account's sync status, and words the evidence, the figures and the next step a message carries.
The rules themselves, for users, are docs/alerts.md's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal

import polars as pl

from dashboards.paths import account_status as status_page
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
HISTORY_DAYS = 56  # the 8 same weekdays before a judged day
DEFAULT_GRACE = timedelta(hours=2)


@dataclass
class Evaluated:
    observations: list[Observation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be judged, and why
    data_day: date | None = None


def evaluate(
    store: AlertStore, rule: Rule, account: str, now: datetime, grace: timedelta = DEFAULT_GRACE
) -> Evaluated:
    """``grace``: how long after a UTC day ends its late entries may still arrive; a day is
    judged for spend anomalies once it is over by that much, in a sync that ran after it."""
    out = Evaluated()
    kind = rule.kind
    if kind == "balance_below":
        _balance(store, rule, account, out)
    elif kind == "runway_below":
        _runway(store, rule, account, out)
    elif kind == "budget":
        _budget(store, rule, account, now.date(), out)
    elif kind == "spend_anomaly":
        _anomalies(store, rule, account, now, grace, out)
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
    figures = [
        (
            "Balance",
            f"{credits(balance)} credits (as fetched {snap['fetched_at']:%Y-%m-%d %H:%M} UTC)",
        ),
        ("Threshold", f"{credits(rule.threshold)} credits"),
    ]
    if balance < rule.threshold:
        figures.append(("Short by", f"{credits(rule.threshold - balance)} credits"))
    if ledger:
        figures.append(("Ledger's closing", f"{credits(ledger['closing'])} on {ledger['day']}"))
    recover_at = rule.threshold * (1 + rule.recover_margin)
    step = (
        f"top up at least {credits(recover_at - balance)} credits (to {credits(recover_at)}, the "
        "threshold and its recovery margin), or pause the campaigns spending fastest"
        if balance < recover_at
        else "nothing: the balance is back above the threshold"
    )
    out.observations.append(Observation(
        rule, account, None, balance, rule.threshold, condition, evidence,
        figures=tuple(figures), next_step=step,
    ))  # fmt: skip


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
    closing = daily["closing"][-1]
    need = per_day * rule.days * (1 + rule.recover_margin) - closing
    figures = (
        ("Runway", f"{days} days (the balance reaches zero on {depletion})"),
        ("Limit", f"{credits(rule.days)} days"),
        ("Burn", f"{credits(per_day)} credits a day (the 28 days before {as_of})"),
        ("Balance", f"{credits(closing)} credits at the end of {as_of}"),
    )
    step = (
        f"top up about {credits(need)} credits before {depletion} to cover {credits(rule.days)} "
        "days at this burn, or slow the campaigns down"
        if need > 0
        else "nothing: the runway is back above its limit"
    )
    out.observations.append(Observation(
        rule, account, None, Decimal(days), rule.days, condition, evidence,
        figures=figures, next_step=step,
    ))  # fmt: skip


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


# A budget's levels, lowest first: several crossed at once are one message, the highest's.
LEVELS = {"projected": 1, "80%": 2, "100%": 3}


def _budget(store: AlertStore, rule: Rule, account: str, today: date, out: Evaluated) -> None:
    limit = rule.monthly_limit
    assert limit is not None
    spend = _spend(store, rule, account, today.replace(day=1), today)
    for status in budget_status(spend, today, limit):
        name = None if rule.dimension == "account" else f"{rule.dimension} {status.value}"
        month = f"{status.month:%B %Y}"
        share = f"{credits(status.spent / limit * 100)}%"
        spent = (
            f"{credits(status.spent)} credits spent in {month} to date: {share} of the monthly "
            f"limit {credits(limit)}"
        )
        step = (
            f"review {name or 'the account'}'s spend with its owner; if it is expected, raise "
            f"monthly_limit of rule {rule.name} in the accounts file"
        )
        for level in BUDGET_LEVELS:
            line = limit * level
            key = f"{level * 100:.0f}%"
            evidence = f"{spent} (the {key} level is {credits(line)} credits)"
            figures = (
                ("Spent", f"{credits(status.spent)} credits in {month} to date"),
                ("Share", f"{share} of the monthly limit {credits(limit)}"),
                ("Level", f"{key}: {credits(line)} credits"),
            )
            out.observations.append(Observation(
                rule, account, _join(name, key), status.spent, line,
                above(status.spent, line, rule.recover_margin), evidence,
                figures=figures, next_step=step, group=name or "", rank=LEVELS[key],
            ))  # fmt: skip
        if status.projected is not None:
            evidence = (
                f"projected {credits(status.projected)} credits for {month}: "
                f"{credits(status.spent_whole_days)} over the {status.whole_days} whole days "
                f"elapsed, times the month's days; the limit is {credits(limit)}"
            )
            figures = (
                ("Projected", f"{credits(status.projected)} credits for {month}"),
                ("From", f"{credits(status.spent_whole_days)} credits over the "
                 f"{status.whole_days} whole days elapsed, times the month's days"),
                ("Spent", f"{credits(status.spent)} credits to date ({share} of the limit)"),
                ("Limit", f"{credits(limit)} credits"),
            )  # fmt: skip
            out.observations.append(Observation(
                rule, account, _join(name, "projected"), status.projected, limit,
                above(status.projected, limit, rule.recover_margin), evidence,
                figures=figures, next_step=step, group=name or "", rank=LEVELS["projected"],
            ))  # fmt: skip


def _join(name: str | None, level: str) -> str:
    return f"{name} {level}" if name else level


def _anomalies(
    store: AlertStore, rule: Rule, account: str, now: datetime, grace: timedelta, out: Evaluated
) -> None:
    """Each UTC day since the last one judged (``alert_rule_runs.data_day``), however many, up
    to the last day that is over by ``grace`` both now and at the account's last successful
    sync (so its late entries had their time to arrive and were read); the first evaluation
    judges only that last day. Whether later entries exist does not matter: a runaway agent's
    last day is judged while nothing follows it."""
    assert rule.min_credits is not None
    span = _one(
        store, "SELECT account, min(day) AS first FROM daily_balance GROUP BY account", account
    )
    if span is None or span["first"] is None:
        return
    status = _status(store, account)
    synced_at = status["last_success_at"] if status else None
    if synced_at is None:
        out.notes.append("no successful sync yet: no day to judge")
        return
    last_day = (min(now, synced_at) - grace).date() - timedelta(days=1)
    before = store.last_evaluated(rule.name, account)
    if before in (NEVER, None):
        start, out.data_day = last_day, last_day
    else:
        start, out.data_day = before + timedelta(days=1), max(last_day, before)
    if start > last_day or last_day < span["first"]:
        return
    spend = _spend(store, rule, account, start - timedelta(days=HISTORY_DAYS), last_day)
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


def _names(store: AlertStore, account: str) -> dict[str, str]:
    """Campaign names by id, from the latest campaigns snapshot (none before the first)."""
    if "campaigns_current" not in store.tables:
        return {}
    found = _of(store, "SELECT account, campaign_id, name FROM campaigns_current", account)
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
    rows = _of(
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
        figures = (
            ("Movement", f"{credits(row['gap'])} credits no ledger entry explains"),
            ("Observed", f"on {row['observed_on']} ({row['break_id']})"),
            ("Detail", row["detail"] or "none"),
        )
        step = (
            f"run `creditlens breaks list --account {account}`; once the movement is explained, "
            f"`creditlens breaks ack {row['break_id']} --reason ...` ends this alert"
        )
        out.observations.append(Observation(
            rule, account, None, row["gap"], None, EVENT, evidence,
            event=f"{row['anchor']}|{row['gap']}",
            present=_recent(row["observed_on"], row["latest"]),
            figures=figures, next_step=step,
        ))  # fmt: skip


def _recent(day: date | None, latest: date | None) -> bool:
    """Observed on the ledger's last day or the one before: news, not history."""
    return day is not None and latest is not None and day >= latest - timedelta(days=1)


def _status(store: AlertStore, account: str) -> dict | None:
    if "account_status" not in store.tables:
        return None
    return _one(
        store,
        "SELECT account, status, last_success_at, last_failure_at, last_failure, "
        "last_failure_step FROM account_status",
        account,
    )


def _syncs(store: AlertStore, rule: Rule, account: str, now: datetime, out: Evaluated) -> None:
    """``sync_failed`` keeps a state per account: firing while its latest attempt failed
    (whether it ever synced or not), recovered at its next successful sync. ``stale`` counts
    from the last success, or from the first recorded attempt of an account that never
    succeeded."""
    status = _status(store, account)
    if status is None:
        return
    success, failure = status["last_success_at"], status["last_failure_at"]
    if rule.kind == "sync_failed":
        failing = failure is not None and (success is None or failure > success)
        if failing:
            evidence = status["last_failure"] or f"account {account}: a sync failed"
            figures = (
                ("Failed", f"{failure:%Y-%m-%d %H:%M} UTC, at step {status['last_failure_step']}"),
                ("Last success", f"{success:%Y-%m-%d %H:%M} UTC" if success else "never"),
            )
            step = (
                f"fix what the line says (a rejected key: check the variable that holds "
                f"{account}'s key), then run `creditlens sync --account {account}`; the site's "
                f"page {status_page(account)} says the same"
            )
        else:
            evidence = f"account {account} synced at {success:%Y-%m-%d %H:%M} UTC"
            figures = (("Synced", f"{success:%Y-%m-%d %H:%M} UTC"),)
            step = "nothing: the account syncs again"
        out.observations.append(Observation(
            rule, account, None, None, None, FIRING if failing else OK, evidence,
            figures=figures, next_step=step,
        ))  # fmt: skip
        return
    assert rule.hours is not None
    since, what = success, "the last ended"
    if since is None:
        first = _one(
            store,
            "SELECT account, min(recorded_at) AS first FROM sync_outcomes GROUP BY account",
            account,
        )
        since, what = (first["first"] if first else None), "it never succeeded; the first try was"
    if since is None:
        return
    hours = Decimal(int((now - since).total_seconds())) / 3600
    evidence = (
        f"no successful sync for {credits(hours)} hours ({what} "
        f"{since:%Y-%m-%d %H:%M} UTC), limit {credits(rule.hours)} hours"
    )
    condition = above(hours, rule.hours, rule.recover_margin)
    figures = (
        ("Without a successful sync", f"{credits(hours)} hours"),
        ("Since", f"{since:%Y-%m-%d %H:%M} UTC ({what.split(';')[-1].strip()})"),
        ("Limit", f"{credits(rule.hours)} hours"),
    )
    step = (
        f"check the scheduler that runs `creditlens sync`, then run `creditlens sync --account "
        f"{account}`; `creditlens alerts list --account {account}` shows a failure's line"
    )
    out.observations.append(Observation(
        rule, account, None, hours.quantize(Decimal("0.01")), rule.hours, condition, evidence,
        figures=figures, next_step=step,
    ))  # fmt: skip


__all__ = ["FIRING", "Evaluated", "evaluate"]
