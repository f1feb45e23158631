"""`creditlens alerts`: list, acknowledge, check and deliver, test a channel; and the delivery
that follows every CLI sync (which warns, never fails the sync)."""

from __future__ import annotations

import getpass
import socket
from datetime import UTC, datetime
from typing import Any

from pipelines.alerts.checking import CheckResult, check_rules, judging
from pipelines.alerts.definitions import materialization_metadata, verdicts
from pipelines.cli.errors import UsageError
from pipelines.cli.recorded import record_alerts
from pipelines.config.alert_rules import KINDS, THRESHOLD_KINDS
from pipelines.config.alerting import alerting
from pipelines.config.settings import Settings
from pipelines.notify.channels import try_channel
from pipelines.notify.delivery import bounds, deliver
from pipelines.warehouse.alert_read import read_alerts
from pipelines.warehouse.alert_store import acknowledge
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.lake import shown


def alert_line(alert: dict[str, Any]) -> str:
    state = alert["state"]
    if alert["acknowledged"]:
        state += f", acknowledged: {alert['ack_reason']}"
    where = alert["account"] + (f", {alert['dimension_value']}" if alert["dimension_value"] else "")
    sent = alert["delivered"] or ("waiting in the outbox" if alert["pending"] else "not sent")
    return (
        f"{alert['alert_id']}  {alert['severity'].upper()}  {alert['rule']} ({alert['kind']})  "
        f"{where}  [{state}]  {alert['evidence']}  (delivered: {sent})"
    )


def list_lines(settings: Settings, everything: bool, account: str | None) -> list[str]:
    found = read_alerts(
        settings.warehouse, settings.lock_timeout_s, everything=everything, account=account
    )
    if not found:
        return ["no alerts" if everything else "no open alerts"]
    return [alert_line(a) for a in found]


def ack(settings: Settings, alert_id: str, reason: str) -> str:
    if not reason.strip():
        raise UsageError("--reason must say why the alert is known")
    if not warehouse_exists(settings.warehouse):
        raise UsageError(
            f"no warehouse at {shown(settings.warehouse)}: run `creditlens sync` first"
        )
    row = {
        "state": "acknowledged",
        "severity": "warn",
        "evidence": f"acknowledged: {reason.strip()}",
        "occurred_at": datetime.now(UTC),
        "reason": reason.strip(),
        "acted_by": f"{getpass.getuser()}@{socket.gethostname()}",
        "measured": None,
        "threshold": None,
    }
    events = frozenset(k for k in KINDS if k not in THRESHOLD_KINDS)
    done = acknowledge(settings.warehouse, settings.lock_timeout_s, alert_id, row, events)
    if done is None:
        raise UsageError(f"no alert {alert_id!r}: see `creditlens alerts list --all`")
    what = f"{done.rule} on {done.account}" + (f", {done.value}" if done.value else "")
    if not done.done:
        raise UsageError(
            f"alert {alert_id} ({what}) is {done.state}, not firing: an acknowledgement belongs "
            "to one crossing, and a later one is news again (`creditlens alerts list --all`)"
        )
    settings.open_warehouse().publish_analyst_copy()
    _record_checks(settings, {"acknowledged": alert_id}, CheckResult(), "alerts ack")
    if done.done == "closed":
        return f"acknowledged {alert_id} ({what}): closed, nothing more is sent for it"
    return f"acknowledged {alert_id} ({what}): silent until it recovers (its recovery is sent)"


def _record_checks(
    settings: Settings, metadata: dict[str, Any], result: CheckResult, command: str
) -> None:
    """The ``alerts`` asset and its checks as this command left them, in the Dagster instance."""
    config = alerting(settings)
    found = read_alerts(settings.warehouse, settings.lock_timeout_s, everything=False, account=None)
    record_alerts(settings, metadata, verdicts(config, settings, result, found), command)


def check_and_deliver(
    settings: Settings, *, in_sync: bool = False, command: str = "alerts check"
) -> tuple[list[str], list[str]]:
    """Evaluates every rule, then sends what is due: (lines for stdout, warnings for stderr)."""
    config = alerting(settings)
    if not config.rules:
        return [
            "no alert rules configured: add [[alerts]] to the accounts file (docs/alerts.md)"
        ], []
    warehouse = settings.open_warehouse()
    names = [a.name for a in settings.accounts]
    result = check_rules(warehouse, config, names, judging=judging(settings))
    delivery = deliver(warehouse, config, bounds=bounds(settings, in_sync=in_sync))
    if result.changes or delivery.sent:
        warehouse.publish_analyst_copy()
    _record_checks(settings, materialization_metadata(result, delivery), result, command)
    lines = [
        f"alert {c.state}: {c.observation.rule.name} on {c.observation.account}"
        + (f", {c.observation.value}" if c.observation.value else "")
        + f" ({c.event_id})"
        for c in result.changes
        if c.state != "baseline"
    ]
    baseline = sum(c.state == "baseline" for c in result.changes)
    if baseline:
        lines.append(
            f"alerts: {baseline} past events recorded at their rule's first evaluation, not sent"
        )
    lines += [f"note: {n}" for n in result.notes]
    lines.append(f"alerts: {len(delivery.sent)} messages delivered")
    return lines, [*result.warnings, *delivery.warnings]


def after_sync(settings: Settings) -> tuple[list[str], list[str]]:
    """The alerts of a CLI sync: what changed (stdout) and warnings (stderr); an alert that
    cannot be evaluated or delivered is a warning, never a failed sync."""
    if not alerting(settings).rules:
        return [], []
    try:
        lines, warnings = check_and_deliver(settings, in_sync=True, command="sync")
    except Exception as exc:  # a channel or a rule must never fail the sync
        return [], [f"alerts: not evaluated: {type(exc).__name__}: {exc}"]
    return [line for line in lines if line.startswith("alert ")], warnings


def test_line(settings: Settings, channel: str) -> tuple[bool, str]:
    problem = try_channel(alerting(settings), channel)
    if problem is None:
        return True, f"channel {channel}: accepted the test message"
    return False, f"channel {channel}: did not accept the test message: {problem}"


__all__ = ["ack", "after_sync", "check_and_deliver", "list_lines", "test_line"]
