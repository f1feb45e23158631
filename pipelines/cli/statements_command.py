"""`creditlens close` and `creditlens statements list`; and the close check that follows every
CLI sync (which warns, never fails the sync)."""

from __future__ import annotations

from datetime import date

from pipelines.cli.errors import UsageError
from pipelines.config.settings import Settings
from pipelines.statements.close import CloseResult, check_closes
from pipelines.warehouse.statement_read import read_statements


def parse_month(text: str) -> date:
    try:
        return date.fromisoformat(f"{text.strip()}-01")
    except ValueError:
        raise UsageError(f"--month must be a month like 2026-10, not {text!r}") from None


def _deliver(settings: Settings, result: CloseResult, resend: bool) -> tuple[list[str], list[str]]:
    """Queues what the check issued (and, by hand, the months asked for again), then sends what
    is due: (lines for stdout, warnings for stderr)."""
    from pipelines.statements.delivery import queue_issued, send_pending

    warehouse = settings.open_warehouse()
    issued = [*result.issued, *(result.already_closed if resend else [])]
    if not issued and not result.restated:
        return [], []
    first = result.first_close_accounts if not resend else set()
    lines = queue_issued(warehouse, settings, issued, result.restated, first)
    sent = send_pending(warehouse, settings)
    return list(lines), list(getattr(sent, "warnings", []))


def close(settings: Settings, month: str | None) -> tuple[list[str], list[str], bool]:
    """A close check by hand (one month with ``month``): (stdout lines, stderr lines, ok). A
    month closed already is sent again, its latest version; one that cannot close yet is one
    line saying why (not ok)."""
    if not settings.warehouse.exists():
        raise UsageError(f"no warehouse at {settings.warehouse}: run `creditlens sync` first")
    wanted = parse_month(month) if month is not None else None
    warehouse = settings.open_warehouse()
    result = check_closes(warehouse, settings, wanted)
    if result.changed:
        warehouse.publish_analyst_copy()
    lines = result.lines()
    lines += [
        f"statement already closed: {s.account} {s.month:%Y-%m} (version {s.version}): sent again"
        for s in result.already_closed
    ]
    sent, warnings = _deliver(settings, result, resend=wanted is not None)
    if sent:
        warehouse.publish_analyst_copy()
    if not lines and not result.refused:
        lines.append("statements: nothing to close")
    return lines + sent, warnings + result.refused, not result.refused


def after_sync(settings: Settings) -> tuple[list[str], list[str]]:
    """The closes of a CLI sync: one line per close and restatement (stdout), and warnings; a
    close that cannot be checked or sent is a warning, never a failed sync."""
    try:
        warehouse = settings.open_warehouse()
        result = check_closes(warehouse, settings)
        if result.changed:
            warehouse.publish_analyst_copy()
    except Exception as exc:  # the statements must never fail the sync
        return [], [f"statements: not closed: {type(exc).__name__}: {exc}"]
    try:
        _, warnings = _deliver(settings, result, resend=False)
    except Exception as exc:
        warnings = [f"statements: not sent: {type(exc).__name__}: {exc}"]
    return result.lines(), warnings


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
        out.append(
            f"{s.account} {s.month:%Y-%m}  version {s.version}  closed on "
            f"{s.first_closed_at:%Y-%m-%d}{restated}  closing {s.closing}  (delivered: {sent})"
        )
        out += [f"  restated on {c}" for c in s.changes]
    return out


__all__ = ["after_sync", "close", "list_lines", "parse_month"]
