"""One evaluation of every rule for every account it applies to, recorded in one transaction.

Called by ``creditlens alerts check``, after each CLI sync, and by Dagster's delivery job; the
changes it records are what the outbox then sends (pipelines/notify/delivery.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pipelines.alerts.evaluate import DEFAULT_GRACE, evaluate
from pipelines.alerts.observe import Observation
from pipelines.alerts.state import DEFAULT_OPEN_FOR, Change, changes, rows
from pipelines.config.alert_rules import Alerting
from pipelines.config.settings import Settings
from pipelines.warehouse.alert_store import NEVER, evaluating
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.writer import Warehouse


@dataclass(frozen=True)
class Judging:
    """The installation's settings for judging and wording alerts (docs/configuration.md)."""

    grace: timedelta = DEFAULT_GRACE  # CREDITLENS_ANOMALY_GRACE_HOURS
    open_for: timedelta = DEFAULT_OPEN_FOR  # CREDITLENS_ANOMALY_OPEN_DAYS
    site: str = ""  # CREDITLENS_SITE_URL, else the reports folder: named in each message


def judging(settings: Settings) -> Judging:
    """How the installation judges and words its alerts (docs/configuration.md)."""
    site = settings.site_url or str(settings.reports_dir)
    return Judging(
        grace=timedelta(hours=float(settings.anomaly_grace_hours)),
        open_for=timedelta(days=settings.anomaly_open_days),
        site=site,
    )


@dataclass
class CheckResult:
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # A rule that could not be evaluated for an account, one line each; the others still were.
    warnings: list[str] = field(default_factory=list)
    # Per rule and account, what it observed this time (the Dagster checks' evidence).
    observed: dict[tuple[str, str], list[Observation]] = field(default_factory=dict)


def check_rules(
    warehouse: Warehouse,
    alerting: Alerting,
    accounts: Sequence[str],
    now: datetime | None = None,
    judging: Judging | None = None,
) -> CheckResult:
    """Evaluates every rule of ``alerting`` for each of ``accounts`` it applies to; an error in
    one rule for one account is a warning naming both, and every other rule is still evaluated."""
    now = now or datetime.now(UTC)
    judging = judging or Judging()
    result = CheckResult()
    path, timeout = warehouse.path, warehouse.lock_timeout_s
    if not alerting.rules or not warehouse_exists(path):
        return result
    with evaluating(path, timeout) as store:
        events, outbox, runs = [], [], []
        for rule in alerting.rules:
            for account in accounts:
                if not rule.applies_to(account):
                    continue
                before = store.last_evaluated(rule.name, account)
                first = before == NEVER
                latest = store.latest(rule.name, account)
                try:
                    seen = evaluate(store, rule, account, now, judging.grace)
                    found = changes(
                        rule, account, seen.observations, latest, first, now, judging.open_for
                    )
                    more_events, more_outbox = rows(found, now, judging.site)
                except Exception as exc:  # one rule never stops the others
                    why = " ".join(str(exc).split()) or "no detail"
                    result.warnings.append(
                        f"alert {rule.name}: account {account}: not evaluated "
                        f"({type(exc).__name__}: {why}); the other rules were"
                    )
                    continue
                events += more_events
                outbox += more_outbox
                if first or (seen.data_day is not None and seen.data_day != before):
                    # Only what the next evaluation starts from: not a row per rule and run.
                    runs.append(
                        {"rule": rule.name, "account": account, "evaluated_at": now,
                         "data_day": seen.data_day}
                    )  # fmt: skip
                result.changes += found
                result.notes += [f"alert {rule.name}: account {account}: {n}" for n in seen.notes]
                result.observed[(rule.name, account)] = seen.observations
        store.record(events, outbox, runs)
    return result
