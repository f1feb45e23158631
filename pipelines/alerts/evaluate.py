"""Each rule measured against the warehouse: the observations ``state.changes`` compares.

The maths is transforms/alert_maths.py's (and the forecast's); this module chooses its inputs,
the latest platform balance, the daily statement, this month's spend, the open findings, each
account's sync status, and words the evidence, the figures and the next step a message carries.
The rules themselves, for users, are docs/alerts.md's.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from decimal import Decimal

from dashboards.paths import account_status as status_page
from pipelines.alerts.anomalies import DEFAULT_GRACE, judge
from pipelines.alerts.observe import (
    EVENT,
    FIRING,
    OK,
    Evaluated,
    Observation,
    above,
    at_least,
    below,
    credits,
)
from pipelines.alerts.reads import account_row, account_rows, spend_by_day, sync_status
from pipelines.config.alert_rules import Rule
from pipelines.warehouse.alert_store import AlertStore
from transforms.alert_maths import BUDGET_LEVELS, budget_status, runway_days
from transforms.forecast import plan_grant


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
        judge(store, rule, account, now, grace, out)
    elif kind == "hidden_movement":
        _findings(store, rule, account, out)
    else:
        _syncs(store, rule, account, now, out)
    return out


def _balance(store: AlertStore, rule: Rule, account: str, out: Evaluated) -> None:
    assert rule.threshold is not None
    snap = account_row(
        store,
        "SELECT account, arg_max(balance, fetched_at) AS balance, max(fetched_at) AS fetched_at "
        "FROM consumption_snapshots WHERE shape_ok AND balance IS NOT NULL GROUP BY account",
        account,
    )
    if snap is None:
        out.notes.append("no balance snapshot yet: nothing to compare")
        return
    ledger = account_row(
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
        f"top up at least {at_least(recover_at - balance)} credits (to {credits(recover_at)}, the "
        "threshold and its recovery margin), or pause the campaigns spending fastest"
        if balance < recover_at
        else "nothing: the balance is back above the threshold"
    )
    out.observations.append(Observation(
        rule, account, None, balance, rule.threshold, condition, evidence,
        figures=tuple(figures), next_step=step,
    ))  # fmt: skip


def _monthly_grant(store: AlertStore, account: str) -> Decimal | None:
    sub = account_row(
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
    daily = account_rows(
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
        f"top up about {at_least(need)} credits before {depletion} to cover {credits(rule.days)} "
        "days at this burn, or slow the campaigns down"
        if need > 0
        else "nothing: the runway is back above its limit"
    )
    out.observations.append(Observation(
        rule, account, None, Decimal(days), rule.days, condition, evidence,
        figures=figures, next_step=step,
    ))  # fmt: skip


# A budget's levels, lowest first: several crossed at once are one message, the highest's.
LEVELS = {"projected": 1, "80%": 2, "100%": 3}


def _budget(store: AlertStore, rule: Rule, account: str, today: date, out: Evaluated) -> None:
    limit = rule.monthly_limit
    assert limit is not None
    spend = spend_by_day(store, rule, account, today.replace(day=1), today)
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


def _findings(store: AlertStore, rule: Rule, account: str, out: Evaluated) -> None:
    """One event per movement, keyed by the entry it follows and its gap, not by its break_id:
    a first evaluation sends only those of the ledger's last two days (news, not history);
    a movement after the last entry becomes one between entries once later entries arrive, a
    new id for the same movement, which must not be a second alert."""
    if "hidden_movements" not in store.tables:
        return
    found = account_rows(
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


def _syncs(store: AlertStore, rule: Rule, account: str, now: datetime, out: Evaluated) -> None:
    """``sync_failed`` keeps a state per account: firing while its latest attempt failed
    (whether it ever synced or not), recovered at its next successful sync. ``stale`` counts
    from the last success, or from the first recorded attempt of an account that never
    succeeded."""
    status = sync_status(store, account)
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
        first = account_row(
            store,
            "SELECT account, min(recorded_at) AS first FROM sync_outcomes GROUP BY account",
            account,
        )
        since, what = (first["first"] if first else None), "it never succeeded; the first try was"
    if since is None:
        return
    hours = Decimal(f"{(now - since).total_seconds():.3f}") / 3600
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
