"""`creditlens sync`: the ledger and the snapshots, in-process, through the Dagster definitions."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from pipelines.api.client import PlatformClient
from pipelines.cli.errors import UsageError
from pipelines.cli.progress_view import sync_progress
from pipelines.cli.runner import RunOutcome, instance, run_job
from pipelines.definitions import build_definitions
from pipelines.ledger.history import History
from pipelines.ledger.history_asset import discover_history, record_history
from pipelines.ledger.sync import LedgerSyncResult
from pipelines.reconciliation.summary import (
    BREAKDOWN,
    HIDDEN_MOVEMENTS,
    SUMMARY,
    CheckRecord,
    ReconciliationSummary,
)
from pipelines.settings import Settings, parse_day
from pipelines.snapshots.fetch import SnapshotResult
from pipelines.warehouse.read import WarehouseError, last_synced_day, recorded_first_day
from transforms.entry_type import EntryTypeRules


@dataclass
class SyncReport:
    """The three runs of a sync, read back through the types that wrote their metadata."""

    first: date
    last: date
    ledger: RunOutcome
    snapshots: RunOutcome
    reconciliation: RunOutcome
    history: History | None = None  # what discovery found, when it ran for this sync
    begins: date | None = None  # where discovery found the ledger begins (this or an earlier run)

    def outcomes(self) -> list[RunOutcome]:
        return [self.ledger, self.snapshots, self.reconciliation]

    def ledger_result(self) -> LedgerSyncResult | None:
        meta = self.ledger.materializations.get("ledger_entries")
        return LedgerSyncResult.from_metadata(meta, self.ledger.run_id) if meta else None

    def snapshot_results(self) -> dict[str, SnapshotResult]:
        return {
            name: SnapshotResult.from_metadata(meta)
            for name, meta in self.snapshots.materializations.items()
        }

    def reconciliation_summary(self) -> ReconciliationSummary | None:
        meta = self.reconciliation.materializations.get("balance_breaks")
        return ReconciliationSummary.from_metadata(meta) if meta is not None else None

    def reconciliation_checks(self) -> list[CheckRecord]:
        return [
            CheckRecord.from_metadata(name, passed, meta)
            for name, (passed, _severity, meta) in sorted(self.reconciliation.checks.items())
        ]

    def has_breaks(self) -> bool:
        summary = self.reconciliation_summary()
        return summary is not None and summary.has_breaks


def resolve_range(
    settings: Settings, since: str | None, until: str | None, begins: date | None = None
) -> tuple[date, date]:
    """The days to sync: ``--since`` or, without it, the last synced day minus the lookback,
    or on a first sync where the ledger begins (CREDITLENS_LEDGER_START, else ``begins``, what
    history discovery found)."""
    today = datetime.now(UTC).date()
    last = parse_day(until, "--until") if until else today
    start = settings.ledger_start or begins or today
    first = parse_day(since, "--since") if since else _resume_from(settings, start) or start
    if first > last:
        raise UsageError(f"--since {first.isoformat()} is after --until {last.isoformat()}")
    if first < start:
        where = (
            "CREDITLENS_LEDGER_START"
            if settings.ledger_start
            else "found by history discovery; set CREDITLENS_LEDGER_START to reach further back"
        )
        raise UsageError(
            f"--since {first.isoformat()} precedes the ledger's first day {start.isoformat()} "
            f"({where})"
        )
    if last > today:
        raise UsageError(f"--until {last.isoformat()} is in the future (today is {today})")
    return first, last


def _resume_from(settings: Settings, start: date) -> date | None:
    """Without --since: the last synced day minus the lookback, so late entries are caught."""
    last = _last_synced(settings)
    if last is None:
        return None
    return max(start, last - timedelta(days=settings.lookback_days))


def _last_synced(settings: Settings) -> date | None:
    if not settings.warehouse.exists():
        return None
    try:
        return last_synced_day(settings.warehouse, settings.account.name)
    except WarehouseError:  # an unreadable warehouse: sync from the start
        return None


def check_writable(settings: Settings) -> None:
    directory = settings.warehouse.parent.resolve()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".creditlens-write-test-{id(settings)}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UsageError(
            f"the warehouse directory {directory} is not writable "
            f"(CREDITLENS_WAREHOUSE={settings.warehouse}): {exc.strerror or exc}"
        ) from None


def run_sync(settings: Settings, since: str | None, until: str | None) -> SyncReport:
    settings.account.api_settings()  # fail fast, with one line, on a missing URL or key
    check_writable(settings)
    history = discover_if_new(settings)
    begins = history.first_day if history else _recorded_begin(settings)
    first, last = resolve_range(settings, since, until, begins)
    defs = build_definitions(settings)
    dagster_instance = instance(settings)
    with sync_progress():
        ledger = run_job(defs, "ledger_sync", dagster_instance, first=first, last=last)
    snapshots = run_job(defs, "snapshot_sync", dagster_instance)
    reconciliation = run_job(defs, "reconciliation_run", dagster_instance)
    return SyncReport(first, last, ledger, snapshots, reconciliation, history, begins)


def discover_if_new(settings: Settings) -> History | None:
    """History discovery, once per account: before its first sync, unless turned off
    (CREDITLENS_HISTORY_LIMIT=0). It runs in this process, through the same functions as the
    ``ledger_history`` asset, so the partitions built next start where it found the ledger."""
    account = settings.account
    if account.history_limit == 0 or _recorded_begin(settings) or _last_synced(settings):
        return None
    warehouse = settings.open_warehouse()
    rules = EntryTypeRules(debit_pattern=settings.debit_type_pattern)
    with PlatformClient(account.api_settings()) as client:
        history = discover_history(client, account, rules)
    record_history(warehouse, history, f"cli-{uuid.uuid4().hex}")
    return history


def _recorded_begin(settings: Settings) -> date | None:
    try:
        return recorded_first_day(settings.warehouse, settings.account.name)
    except WarehouseError:
        return None


def summary_lines(report: SyncReport) -> list[str]:
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
    if summary.opening_status == "skipped":  # a break is listed with the movements below
        lines.append(f"  opening: {summary.opening_message}")
    for check in report.reconciliation_checks():
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
    if summary.unacknowledged:
        lines.append(
            "  see: creditlens breaks list; acknowledge a known one with "
            "creditlens breaks ack BREAK_ID --reason TEXT"
        )
    return lines


def history_lines(report: SyncReport) -> list[str]:
    """What history discovery found when it ran, and any days deliberately left out."""
    lines = []
    if report.history is not None:
        lines.append(f"history: {report.history.sentence()}")
    if report.begins is not None and report.first > report.begins and report.history is not None:
        skipped_to = (report.first - timedelta(days=1)).isoformat()
        lines.append(
            f"history: {report.begins.isoformat()}..{skipped_to} not synced (--since or "
            "CREDITLENS_LEDGER_START); the balance of those days is carried in"
        )
    return lines
