"""`creditlens sync`: the ledger and the snapshots, in-process, through the Dagster definitions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from pipelines.api.settings import ApiSettings
from pipelines.cli.errors import UsageError
from pipelines.cli.progress_view import sync_progress
from pipelines.cli.runner import RunOutcome, instance, run_job
from pipelines.definitions import build_definitions
from pipelines.settings import Settings, parse_day
from pipelines.warehouse.read import WarehouseError, last_synced_day


@dataclass
class SyncReport:
    first: date
    last: date
    ledger: RunOutcome
    snapshots: RunOutcome
    reconciliation: RunOutcome

    def outcomes(self) -> list[RunOutcome]:
        return [self.ledger, self.snapshots, self.reconciliation]

    def has_breaks(self) -> bool:
        meta = self.reconciliation.materializations.get("balance_breaks", {})
        return any(meta.get(f"breaks_{k}", 0) for k in ("continuity", "summary", "breakdown"))


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
        last = last_synced_day(settings.warehouse, settings.account)
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
    ApiSettings.from_env()  # fail fast, with one line, on a missing key or a bad base URL
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
    meta = report.ledger.materializations.get("ledger_entries", {})
    if meta:
        lines.append(
            f"ledger {meta.get('range')}: fetched {meta.get('entries_fetched')}, "
            f"landed {meta.get('entries_landed')}, quarantined {meta.get('entries_quarantined')} "
            f"({meta.get('windows')} windows, {meta.get('pages')} pages, "
            f"{meta.get('duration_s')}s)"
        )
    for name, m in sorted(report.snapshots.materializations.items()):
        state = "stored" if m.get("stored") else "unchanged"
        shape = "" if m.get("shape_ok", True) else " (unexpected shape: kept as raw JSON)"
        lines.append(f"{name}: {state}{shape}")
    lines += reconciliation_lines(report.reconciliation)
    failed = [
        f"check {name} failed: {meta}"
        for outcome in (report.ledger, report.snapshots)
        for name, (passed, _sev, meta) in outcome.checks.items()
        if not passed
    ]
    return lines + failed


def reconciliation_lines(outcome: RunOutcome) -> list[str]:
    meta = outcome.materializations.get("balance_breaks")
    if meta is None:
        return []
    counts = {k: meta.get(f"breaks_{k}", 0) for k in ("continuity", "summary", "breakdown")}
    lines = [
        f"reconciliation ({meta.get('sign_convention')}, tolerance {meta.get('tolerance')}): "
        f"{counts['continuity']} hidden movement(s), {counts['summary']} summary and "
        f"{counts['breakdown']} breakdown mismatch(es)"
    ]
    for name, (passed, _severity, check_meta) in sorted(outcome.checks.items()):
        if name == "no_hidden_movements" and not passed:
            for row in check_meta.get("breaks", [])[:10]:
                lines.append(f"  hidden movement: {row.get('detail')}")
        elif not passed or check_meta.get("status") == "unavailable":
            lines.append(f"  {name}: {check_meta.get('message')}")
    return lines
