"""One close check and what it sends: the same for `creditlens sync`, `creditlens close`, the
Dagster job after each reconciliation and the daily schedule.

A close and its messages are recorded in one transaction (the messages as outbox rows); sending
follows through the outbox (pipelines/statements/delivery.py), so a channel that is down loses
nothing and never undoes a close: its messages wait and the next check sends them. A crash
between the two leaves neither, and the next check closes and queues again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from pipelines.config.settings import Settings
from pipelines.statements.close import CloseResult, check_closes
from pipelines.statements.delivery import message_rows, queued_lines, send_pending
from pipelines.warehouse.writer import Warehouse


@dataclass
class CheckOutcome:
    result: CloseResult
    queued: list[str] = field(default_factory=list)  # one line per message queued
    warnings: list[str] = field(default_factory=list)


def close_and_deliver(
    warehouse: Warehouse, settings: Settings, month: date | None = None, resend: bool = False
) -> CheckOutcome:
    """Closes and restates (``month`` only when given) and queues their messages, in one
    transaction, then sends. ``resend``: a month asked for by hand that is closed already is
    queued again (its latest version), and every month asked for is sent, one or several."""

    def messages(result: CloseResult) -> list[dict[str, Any]]:
        issued = [*result.issued, *(result.already_closed if resend else [])]
        first = set() if resend else result.first_close_accounts
        rows = message_rows(settings, issued, result.restated, first, resend)
        if result.unsent:  # closed by an earlier version, never queued: queued once, now
            rows += message_rows(settings, result.unsent, [], set())
        return rows

    result = check_closes(warehouse, settings, month, messages=messages, again=resend)
    outcome = CheckOutcome(result, queued_lines(result.queued))
    if result.changed or result.queued:
        warehouse.publish_analyst_copy()
    try:
        outcome.warnings += send_pending(warehouse, settings).warnings
    except Exception as exc:  # a channel must never fail the check: the outbox keeps them
        outcome.warnings.append(f"statements: not sent: {type(exc).__name__}: {exc}")
    return outcome
