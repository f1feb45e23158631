"""One close check and what it sends: the same for `creditlens sync`, `creditlens close`, the
Dagster job after each reconciliation and the daily schedule.

Closing is recorded first, in its own transaction; sending follows through the alerts' outbox
(pipelines/statements/delivery.py), so a channel that is down loses nothing and never undoes a
close: its messages wait and the next check sends them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from pipelines.config.settings import Settings
from pipelines.statements.close import CloseResult, check_closes
from pipelines.statements.delivery import queue_issued, send_pending
from pipelines.warehouse.writer import Warehouse


@dataclass
class CheckOutcome:
    result: CloseResult
    queued: list[str] = field(default_factory=list)  # one line per message queued
    warnings: list[str] = field(default_factory=list)


def close_and_deliver(
    warehouse: Warehouse, settings: Settings, month: date | None = None, resend: bool = False
) -> CheckOutcome:
    """Closes and restates (``month`` only when given), then queues and sends. ``resend``: a
    month asked for by hand that is closed already is queued again (its latest version); an
    account's first close then delivers every month asked for, not only the latest."""
    result = check_closes(warehouse, settings, month)
    if result.changed:
        warehouse.publish_analyst_copy()
    outcome = CheckOutcome(result)
    issued = [*result.issued, *(result.already_closed if resend else [])]
    if issued or result.restated:
        first = set() if resend else result.first_close_accounts
        try:
            queued = queue_issued(warehouse, settings, issued, result.restated, first, resend)
            outcome.queued = list(queued)
        except Exception as exc:  # the close stands; its messages can be sent by hand
            outcome.warnings.append(f"statements: not queued: {type(exc).__name__}: {exc}")
    try:
        outcome.warnings += send_pending(warehouse, settings).warnings
    except Exception as exc:  # a channel must never fail the check: the outbox keeps them
        outcome.warnings.append(f"statements: not sent: {type(exc).__name__}: {exc}")
    if outcome.queued:
        warehouse.publish_analyst_copy()
    return outcome
