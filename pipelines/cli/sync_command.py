"""`creditlens sync`: the ledger and the snapshots of every account, in-process, through the
Dagster definitions: three runs whatever the number of accounts, each account's failure its own."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from pipelines.account_checks import SEPARATOR, asset_path, named_per_account
from pipelines.account_work import AccountFailure, failures, succeeded
from pipelines.api.errors import ConfigurationError
from pipelines.cli.errors import UsageError
from pipelines.cli.progress_view import sync_progress
from pipelines.cli.recorded import record_discovery
from pipelines.cli.runner import RunOutcome, instance, run_job
from pipelines.definitions import build_definitions
from pipelines.ledger.history import History
from pipelines.ledger.history_asset import discover_histories, record_histories
from pipelines.ledger.sync import LedgerSyncResult
from pipelines.reconciliation.summary import (
    BREAKDOWN,
    HIDDEN_MOVEMENTS,
    SUMMARY,
    CheckRecord,
    ReconciliationSummary,
)
from pipelines.settings import AccountSettings, Settings, parse_day
from pipelines.snapshots.fetch import SnapshotResult
from pipelines.warehouse.read import WarehouseError, last_synced_days, recorded_first_days
from transforms.entry_type import EntryTypeRules


@dataclass
class SyncReport:
    """The three runs of a sync, read back through the types that wrote their metadata.

    Every reader takes the account: a sync covers every configured account, and a run of
    several records each account's figures as observations of its own (a run of one keeps
    them on its materializations, as it always has)."""

    first: date
    last: date
    ledger: RunOutcome
    snapshots: RunOutcome
    reconciliation: RunOutcome
    history: History | None = None  # what discovery found, when it ran for this sync
    begins: date | None = None  # where discovery found the ledger begins (this or an earlier run)
    accounts: tuple[str, ...] = ()
    per_account: bool = False  # lines and check names carry the account (an accounts file)
    histories: dict[str, History] = field(default_factory=dict)
    beginnings: dict[str, date] = field(default_factory=dict)
    ranges: dict[str, tuple[date, date]] = field(default_factory=dict)
    # Accounts that failed before any run (a missing key variable, discovery refused).
    early_failures: list[AccountFailure] = field(default_factory=list)

    def outcomes(self) -> list[RunOutcome]:
        return [self.ledger, self.snapshots, self.reconciliation]

    def _account(self, account: str | None) -> str | None:
        return account if account is not None else (self.accounts[0] if self.accounts else None)

    def ledger_result(self, account: str | None = None) -> LedgerSyncResult | None:
        name = self._account(account)
        meta = self.ledger.observed("ledger_entries", name) if name else None
        meta = meta or (self.ledger.materializations.get("ledger_entries") if not account else None)
        return LedgerSyncResult.from_metadata(meta, self.ledger.run_id) if meta else None

    def snapshot_results(self, account: str | None = None) -> dict[str, SnapshotResult]:
        name = self._account(account)
        found: dict[str, SnapshotResult] = {}
        for key, meta in self.snapshots.materializations.items():
            observed = self.snapshots.observed(key, name) if name else None
            if observed is not None:
                found[key] = SnapshotResult.from_metadata(observed)
            elif "accounts" not in meta and (name is None or meta.get("account") == name):
                found[key] = SnapshotResult.from_metadata(meta)
        return found

    def reconciliation_summary(self, account: str | None = None) -> ReconciliationSummary | None:
        name = self._account(account)
        path = asset_path("balance_breaks", name or "", self.per_account and name is not None)
        meta = self.reconciliation.materializations.get("/".join(path))  # the account's asset
        return ReconciliationSummary.from_metadata(meta) if meta is not None else None

    def reconciliation_checks(self, account: str | None = None) -> list[CheckRecord]:
        name = self._account(account)
        return [
            CheckRecord.from_metadata(check.split(SEPARATOR, 1)[0], passed, meta)
            for check, (passed, _severity, meta) in sorted(self.reconciliation.checks.items())
            if name is None or meta.get("account", name) == name
        ]

    def failures(self) -> list[AccountFailure]:
        """One per failed account, its first failure: the others follow from it."""
        seen: dict[str, AccountFailure] = {}
        for failure in [*self.early_failures, *self.ledger.account_failures(),
                        *self.snapshots.account_failures()]:  # fmt: skip
            seen.setdefault(failure.account, failure)
        return list(seen.values())

    def has_breaks(self) -> bool:
        return any(
            summary is not None and summary.has_breaks
            for summary in (self.reconciliation_summary(a) for a in self.accounts or (None,))
        )


def resolve_range(
    settings: Settings,
    since: str | None,
    until: str | None,
    begins: date | None = None,
    last_synced: date | None = None,
) -> tuple[date, date]:
    """The days to sync for one account: ``--since`` or, without it, its last synced day minus
    the lookback, or on its first sync where its ledger begins (CREDITLENS_LEDGER_START, else
    ``begins``, what history discovery found)."""
    today = datetime.now(UTC).date()
    last = parse_day(until, "--until") if until else today
    start = settings.ledger_start or begins or today
    resume = (
        max(start, last_synced - timedelta(days=settings.lookback_days)) if last_synced else None
    )
    first = parse_day(since, "--since") if since else resume or start
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


def _read_or_nothing(
    read: Callable[[Path, list[str]], dict[str, date]], settings: Settings
) -> dict[str, date]:
    """A per-account question to the warehouse; an absent or unreadable one knows nothing yet
    (the sync starts from the beginning, as on a first run)."""
    if not settings.warehouse.exists():
        return {}
    try:
        return read(settings.warehouse, [a.name for a in settings.accounts])
    except WarehouseError:
        return {}


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


def run_sync(
    settings: Settings, since: str | None, until: str | None, accounts: Sequence[str] = ()
) -> SyncReport:
    """Every configured account (or those named), in three runs whatever their number, several
    accounts at once inside each; one account failing fails only itself."""
    settings = settings.selecting(accounts)
    per_account = named_per_account(settings)
    ready, early = _ready_accounts(settings)
    check_writable(settings)
    synced = _read_or_nothing(last_synced_days, settings)
    histories, failed = discover_new(_only(settings, ready), synced)
    early += failed
    ready = [a for a in ready if a.name not in {f.account for f in failed}]
    beginnings = {**_read_or_nothing(recorded_first_days, settings)}
    beginnings.update({n: h.first_day for n, h in histories.items() if h.first_day})
    ranges = {
        a.name: resolve_range(settings, since, until, beginnings.get(a.name), synced.get(a.name))
        for a in ready
    }
    names = [a.name for a in settings.accounts]
    if not ranges:
        return SyncReport(
            *_today(), *(RunOutcome(job, True) for job in JOBS), accounts=tuple(names),
            per_account=per_account, histories=histories, beginnings=beginnings,
            early_failures=early,
        )  # fmt: skip
    first = min(r[0] for r in ranges.values())
    last = max(r[1] for r in ranges.values())
    since_by_account = {n: r[0].isoformat() for n, r in ranges.items() if r[0] > first}
    syncing = _only(settings, ready)
    dagster_instance = instance(syncing)
    with sync_progress():
        ledger = run_job(
            build_definitions(syncing), "ledger_sync", dagster_instance, first=first, last=last,
            op_config={"ledger_entries": {"since": since_by_account}} if since_by_account else None,
        )  # fmt: skip
    landed = [a for a in ready if a.name not in {f.account for f in ledger.account_failures()}]
    if landed:
        defs = build_definitions(_only(settings, landed))
        snapshots = run_job(defs, "snapshot_sync", dagster_instance)
        reconciliation = run_job(defs, "reconciliation_run", dagster_instance)
    else:
        snapshots, reconciliation = RunOutcome(JOBS[1], True), RunOutcome(JOBS[2], True)
    only = names[0] if len(names) == 1 else None
    return SyncReport(
        first, last, ledger, snapshots, reconciliation,
        history=histories.get(only) if only else None,
        begins=beginnings.get(only) if only else None,
        accounts=tuple(names), per_account=per_account, histories=histories,
        beginnings=beginnings, ranges=ranges, early_failures=early,
    )  # fmt: skip


JOBS = ("ledger_sync", "snapshot_sync", "reconciliation_run")


def _today() -> tuple[date, date]:
    today = datetime.now(UTC).date()
    return today, today


def _only(settings: Settings, accounts: Sequence[AccountSettings]) -> Settings:
    return settings.selecting([a.name for a in accounts]) if accounts else settings


def _ready_accounts(settings: Settings) -> tuple[list[AccountSettings], list[AccountFailure]]:
    """The accounts whose URL and key variable are set. A single account fails fast, with its
    one line, as it always has; among several, one missing key fails only its account."""
    if len(settings.accounts) == 1:
        settings.accounts[0].api_settings()
        return list(settings.accounts), []
    ready, failed = [], []
    for account in settings.accounts:
        try:
            account.api_settings()
        except ConfigurationError as exc:
            failed.append(AccountFailure.of(account.name, "settings", exc))
        else:
            ready.append(account)
    return ready, failed


def discover_new(
    settings: Settings, synced: dict[str, date] | None = None
) -> tuple[dict[str, History], list[AccountFailure]]:
    """History discovery, once per account: before its first sync, unless turned off
    (CREDITLENS_HISTORY_LIMIT=0). It runs in this process, several accounts at once, through the
    same functions as the ``ledger_history`` asset, so the partitions built next start where it
    found the ledger."""
    synced = _read_or_nothing(last_synced_days, settings) if synced is None else synced
    recorded = _read_or_nothing(recorded_first_days, settings)
    new = [
        a
        for a in settings.accounts
        if a.history_limit and a.name not in recorded and a.name not in synced
    ]
    if not new:
        return {}, []
    rules = EntryTypeRules(debit_pattern=settings.debit_type_pattern)
    outcomes = discover_histories(new, rules, settings.account_concurrency)
    found = {account.name: history for account, history in succeeded(outcomes)}
    if len(settings.accounts) == 1 and outcomes[0].exception is not None:
        raise outcomes[0].exception
    if found:
        record_histories(settings.open_warehouse(), list(found.values()), f"cli-{uuid.uuid4().hex}")
        record_discovery(settings, list(found.values()), len(new))
    return found, failures(outcomes)


def discover_if_new(settings: Settings) -> History | None:
    """``discover_new`` for a single-account installation."""
    found, _ = discover_new(settings)
    return found.get(settings.account.name)


def summary_lines(report: SyncReport) -> list[str]:
    """What the sync did: with an accounts file one line per account that synced (its failures
    are ``failure_lines``, for stderr), else the single account's lines as they always were."""
    if report.per_account:
        failed = {f.account for f in report.failures()}
        return [account_line(report, name) for name in report.accounts if name not in failed]
    return single_account_lines(report)


def failure_lines(report: SyncReport) -> list[str]:
    return [failure.line() for failure in report.failures()]


def account_line(report: SyncReport, account: str) -> str:
    """One account's sync on one line: the ledger, the snapshots, the reconciliation."""
    parts = []
    history = report.histories.get(account)
    if history is not None and history.first_day is not None:
        parts.append(f"history: the ledger begins {history.first_day.isoformat()}")
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
