"""What `creditlens sync` prints: one line per account with its findings under it (an accounts
file), or the single account's lines as they always were; failures apart, for stderr."""

from __future__ import annotations

from datetime import date, timedelta

from pipelines.cli.sync_report import SyncReport
from pipelines.ledger.history_search import History
from pipelines.reconciliation.summary import BREAKDOWN, HIDDEN_MOVEMENTS, SUMMARY


def summary_lines(report: SyncReport) -> list[str]:
    """What the sync did: with an accounts file one line per account that synced (its failures
    are ``failure_lines``, for stderr), else the single account's lines as they always were."""
    if report.per_account:
        failed = {f.account for f in report.failures()}
        lines = []
        for name in report.accounts:
            if name not in failed:
                lines += [account_line(report, name), *finding_lines(report, name)]
        summaries = [report.reconciliation_summary(n) for n in report.accounts if n not in failed]
        if any(summary is not None and summary.unacknowledged for summary in summaries):
            lines.append(SEE_BREAKS)
        return lines
    return single_account_lines(report)


def failure_lines(report: SyncReport) -> list[str]:
    return [failure.line() for failure in report.failures()]


def account_line(report: SyncReport, account: str) -> str:
    """One account's sync on one line: the ledger, the snapshots, the reconciliation."""
    parts = []
    history = report.histories.get(account)
    if history is not None and history.first_day is not None:
        quiet = "".join(f", quiet period: {q.text()}" for q in history.quiet)
        parts.append(f"history: the ledger begins {history.first_day.isoformat()}{quiet}")
    ledger = report.ledger_result(account)
    parts.append(ledger.summary() if ledger else "ledger: not synced")
    snapshots = report.snapshot_results(account)
    stored = sum(1 for s in snapshots.values() if s.stored)
    odd = sum(1 for s in snapshots.values() if not s.shape_ok)
    parts.append(
        f"snapshots: {stored} stored, {len(snapshots) - stored} unchanged"
        + (f", {odd} of unexpected shape (kept as raw JSON)" if odd else "")
    )
    summary = report.reconciliation_summary(account)
    if summary is not None:
        parts.append(
            f"reconciliation: {summary.movements} hidden movement(s) (gross {summary.gross}, "
            f"net {summary.net}), {summary.mismatches} breakdown mismatch(es), "
            f"{summary.unacknowledged} not acknowledged"
            + (f" ({summary.reconciled})" if summary.reconciled else "")
        )
    return f"{account}: " + "; ".join(parts)


def single_account_lines(report: SyncReport) -> list[str]:
    lines = history_lines(report)
    ledger = report.ledger_result()
    if ledger is not None:
        lines.append(ledger.summary())
    for name, snapshot in sorted(report.snapshot_results().items()):
        state = "stored" if snapshot.stored else "unchanged"
        shape = "" if snapshot.shape_ok else " (unexpected shape: kept as raw JSON)"
        lines.append(f"{name}: {state}{shape}")
    lines += reconciliation_lines(report)
    failed = [
        f"check {name} failed: {meta}"
        for outcome in (report.ledger, report.snapshots)
        for name, (passed, _sev, meta) in outcome.checks.items()
        if not passed
    ]
    return lines + failed


def reconciliation_lines(report: SyncReport) -> list[str]:
    summary = report.reconciliation_summary()
    if summary is None:
        return []
    lines = [
        f"reconciliation ({summary.sign_convention}, tolerance {summary.tolerance}): "
        f"{summary.movements} hidden movement(s) (gross {summary.gross}, net {summary.net}) and "
        f"{summary.mismatches} breakdown mismatch(es); {summary.acknowledged} acknowledged, "
        f"{summary.unacknowledged} not"
    ]
    if summary.reconciled:  # "incremental from 2026-11-19" or "full: <why>"
        lines.append(f"  reconciled {summary.reconciled}")
    if summary.opening_status == "skipped":  # a break is listed with the movements below
        lines.append(f"  opening: {summary.opening_message}")
    lines += finding_lines(report)
    if summary.unacknowledged:
        lines.append(SEE_BREAKS)
    return lines


def history_lines(report: SyncReport) -> list[str]:
    """What history discovery found when it ran, and the synced days against where the ledger
    begins (``history_summary`` below)."""
    return history_summary(report.history, report.begins, report.first)


SEE_BREAKS = (
    "  see: creditlens breaks list; acknowledge a known one with "
    "creditlens breaks ack BREAK_ID --reason TEXT"
)


def finding_lines(report: SyncReport, account: str | None = None) -> list[str]:
    """The findings of an account's reconciliation, indented under its summary: what its
    failed checks carry (the first ten of each; every one is in ``creditlens breaks list``)."""
    lines: list[str] = []
    for check in report.reconciliation_checks(account):
        if check.name == HIDDEN_MOVEMENTS and not check.passed:
            lines += [
                f"  hidden movement {row.get('break_id')} ({row.get('placement')}): "
                f"{row.get('detail')}"
                for row in check.breaks[:10]
            ]
            if (check.hidden_movements or 0) > 10:
                lines.append(
                    "  ... every one: creditlens breaks list, or the hidden_movements view"
                )
        elif check.name == BREAKDOWN and not check.passed:
            lines.append(f"  {check.name}: {check.message}")
            lines += [
                f"  breakdown mismatch {row.get('break_id')}: {row.get('detail')}"
                for row in check.breaks[:10]
            ]
        elif check.name == SUMMARY and check.status == "break":
            continue  # listed with the movements, as the one after the last entry
        elif not check.passed or check.status == "unavailable":
            lines.append(f"  {check.name}: {check.message}")
    return lines


# The history lines: what discovery found, and how the synced days stand to where the ledger
# begins (before it: read as asked; after it: left out, the balance carried in). Both ways of
# starting elsewhere than the first day are said, never refused or left silent: the opening
# check (transforms/opening.py) reads the same days the other way round.


def history_summary(history: History | None, begins: date | None, first: date) -> list[str]:
    """``history``: what discovery found in this sync, if it ran; ``begins``: where the ledger
    begins (this or an earlier discovery); ``first``: the first day this sync read."""
    lines = []
    if history is not None:
        lines.append(f"history: {history.sentence()}")
    if begins is not None and first < begins:
        before = (begins - timedelta(days=1)).isoformat()
        lines.append(
            f"history: the ledger begins {begins.isoformat()} (its first entry, found by history "
            f"discovery); {first.isoformat()}..{before}, before it, were read as asked"
        )
    if begins is not None and first > begins and history is not None:
        skipped_to = (first - timedelta(days=1)).isoformat()
        lines.append(
            f"history: {begins.isoformat()}..{skipped_to} not synced (--since or "
            "CREDITLENS_LEDGER_START); the balance of those days is carried in"
        )
    return lines
