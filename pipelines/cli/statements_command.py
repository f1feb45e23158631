"""`creditlens close` and `creditlens statements list`; and the close check that follows every
CLI sync (which warns, never fails the sync)."""

from __future__ import annotations

import shlex

from pipelines.cli.errors import UsageError
from pipelines.cli.recorded import record_closes
from pipelines.cli.report_command import parse_month
from pipelines.config.settings import Settings
from pipelines.statements.delivery import close_and_deliver
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.lake import shown
from pipelines.warehouse.statement_read import read_statements


def close(settings: Settings, month: str | None) -> tuple[list[str], list[str], bool]:
    """A close check by hand (one month with ``month``): (stdout lines, stderr lines, ok). A
    month closed already is sent again, its latest version; one that cannot close yet is one
    line saying why (not ok)."""
    if not warehouse_exists(settings.warehouse):
        raise UsageError(
            f"no warehouse at {shown(settings.warehouse)}: run `creditlens sync` first"
        )
    wanted = parse_month(month)
    outcome = close_and_deliver(
        settings.open_warehouse(), settings, wanted, resend=wanted is not None
    )
    record_closes(settings, outcome, "close")
    result = outcome.result
    lines = result.lines()
    lines += [
        f"statement already closed: {s.account} {s.month:%Y-%m} (version {s.version}): sent again"
        for s in result.already_closed
    ]
    lines += result.empty
    if not lines and not result.refused:
        lines.append("statements: nothing to close or restate")
    return lines + outcome.queued, outcome.warnings + result.refused, not result.refused


def after_sync(settings: Settings) -> tuple[list[str], list[str]]:
    """The closes of a CLI sync: one line per close and restatement (stdout), and warnings; a
    close that cannot be checked or sent is a warning, never a failed sync."""
    try:
        outcome = close_and_deliver(settings.open_warehouse(), settings)
    except Exception as exc:  # the statements must never fail the sync
        return [], [f"statements: not closed: {type(exc).__name__}: {exc}"]
    record_closes(settings, outcome, "sync")
    return outcome.result.lines(), outcome.warnings


def list_lines(settings: Settings, account: str | None) -> list[str]:
    if account is not None:
        settings.selecting([account])  # an unknown name is one line listing the configured ones
    found = read_statements(settings.warehouse, settings.lock_timeout_s, account)
    if not found:
        return ["no closed statements"]
    out = []
    for s in found:
        restated = ""
        if s.version > 1:
            restated = f", restated {s.version - 1} time(s), last on {s.restated_at:%Y-%m-%d}"
        sent = s.delivered or ("waiting in the outbox" if s.pending else "not sent")
        if not s.delivered and not s.pending and s.first_close:
            sent = (
                "not sent: closed with later months at once; send it with `creditlens close "
                f"--month {s.month:%Y-%m} --account {shlex.quote(s.account)}`"
            )
        out.append(
            f"{s.account} {s.month:%Y-%m}  version {s.version}  closed on "
            f"{s.first_closed_at:%Y-%m-%d}{restated}  closing {s.closing}  (delivered: {sent})"
        )
        out += [f"  {c}" for c in s.changes]
    return out


__all__ = ["after_sync", "close", "list_lines"]
