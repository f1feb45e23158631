"""`creditlens sync`: the ledger and the snapshots, in-process, through the Dagster definitions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from pipelines.cli.errors import UsageError
from pipelines.cli.progress_view import sync_progress
from pipelines.cli.runner import RunOutcome, instance, run_job
from pipelines.definitions import build_definitions
from pipelines.ledger.sync import LedgerSyncResult
from pipelines.reconciliation.summary import HIDDEN_MOVEMENTS, CheckRecord, ReconciliationSummary
from pipelines.settings import Settings, parse_day
from pipelines.snapshots.fetch import SnapshotResult
from pipelines.warehouse.read import WarehouseError, last_synced_day


@dataclass
class SyncReport:
    """The three runs of a sync, read back through the types that wrote their metadata."""

    first: date
    last: date
    ledger: RunOutcome
    snapshots: RunOutcome
    reconciliation: RunOutcome

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


def resolve_range(settings: Settings, since: str | None, until: str | None) -> tuple[date, date]:
    today = datetime.now(UTC).date()
    last = parse_day(until, "--until") if until else today
    if since:
        first = parse_day(since, "--since")
    else:
        first = _resume_from(settings) or settings.ledger_start
    if first > last:
        raise UsageError(f"--since {first.isoformat()} is after --until {last.isoformat()}")
    if first < settings.ledger_start:
        raise UsageError(
            f"--since {first.isoformat()} precedes the ledger's first partition "
            f"{settings.ledger_start.isoformat()} (set CREDITLENS_LEDGER_START)"
        )
    if last > today:
        raise UsageError(f"--until {last.isoformat()} is in the future (today is {today})")
    return first, last


def _resume_from(settings: Settings) -> date | None:
    """Without --since: the last synced day minus the lookback, so late entries are caught."""
    if not settings.warehouse.exists():
        return None
    try:
        last = last_synced_day(settings.warehouse, settings.account.name)
    except WarehouseError:  # an unreadable warehouse: sync from the start
        return None
    if last is None:
        return None
    return max(settings.ledger_start, last - timedelta(days=settings.lookback_days))


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
    first, last = resolve_range(settings, since, until)
    defs = build_definitions(settings)
    dagster_instance = instance()
    with sync_progress():
        ledger = run_job(defs, "ledger_sync", dagster_instance, first=first, last=last)
    snapshots = run_job(defs, "snapshot_sync", dagster_instance)
    reconciliation = run_job(defs, "reconciliation_run", dagster_instance)
    return SyncReport(first, last, ledger, snapshots, reconciliation)


def summary_lines(report: SyncReport) -> list[str]:
    lines = []
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
        f"{summary.breaks['continuity']} hidden movement(s), {summary.breaks['summary']} summary "
        f"and {summary.breaks['breakdown']} breakdown mismatch(es)"
    ]
    for check in report.reconciliation_checks():
        if check.name == HIDDEN_MOVEMENTS and not check.passed:
            lines += [f"  hidden movement: {row.get('detail')}" for row in check.breaks[:10]]
        elif not check.passed or check.status == "unavailable":
            lines.append(f"  {check.name}: {check.message}")
    return lines
