"""One evaluation of every rule for every account it applies to, recorded in one transaction.

Called by ``creditlens alerts check``, after each CLI sync, and by Dagster's delivery job; the
changes it records are what the outbox then sends (pipelines/alerts/delivery.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pipelines.alerts.evaluate import evaluate
from pipelines.alerts.observe import Observation
from pipelines.alerts.state import Change, changes, rows
from pipelines.config.alert_rules import Alerting
from pipelines.warehouse.alert_store import NEVER, evaluating
from pipelines.warehouse.writer import Warehouse


@dataclass
class CheckResult:
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Per rule and account, what it observed this time (the Dagster checks' evidence).
    observed: dict[tuple[str, str], list[Observation]] = field(default_factory=dict)


def check_rules(
    warehouse: Warehouse,
    alerting: Alerting,
    accounts: Sequence[str],
    now: datetime | None = None,
) -> CheckResult:
    """Evaluates every rule of ``alerting`` for each of ``accounts`` it applies to."""
    now = now or datetime.now(UTC)
    result = CheckResult()
    path, timeout = warehouse.path, warehouse.lock_timeout_s
    if not alerting.rules or not path.exists():
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
                seen = evaluate(store, rule, account, now)
                found = changes(rule, account, seen.observations, latest, first)
                more_events, more_outbox = rows(found, latest, now)
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
