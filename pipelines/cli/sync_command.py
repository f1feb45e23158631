"""`creditlens sync`: the ledger and the snapshots of every account, in-process, through the
Dagster definitions: two runs whatever the number of accounts (the ledger and the snapshots, then
the reconciliation), each account's failure its own."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import TypeVar

from pipelines.api.errors import ConfigurationError
from pipelines.cli.errors import BadFlag, UsageError
from pipelines.cli.progress_view import sync_progress
from pipelines.cli.recorded import record_discovery
from pipelines.cli.runner import RunOutcome, instance, run_job
from pipelines.cli.sync_lines import failure_lines, summary_lines
from pipelines.cli.sync_report import SyncReport
from pipelines.config.account import AccountSettings
from pipelines.config.settings import Settings
from pipelines.config.values import parse_day
from pipelines.definitions import build_definitions
from pipelines.ledger.history_asset import discover_histories, record_histories
from pipelines.ledger.history_search import History
from pipelines.ledger.partitions import covering
from pipelines.orchestration.account_work import (
    AccountFailure,
    failures,
    named_per_account,
    succeeded,
)
from pipelines.orchestration.automation import LEDGER
from pipelines.orchestration.sync_outcomes import outcome_rows
from pipelines.snapshots.registry import TABLES
from pipelines.snapshots.schedules import SYNC_JOB
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.outcome_tables import STEPS
from pipelines.warehouse.publish import publishing_once
from pipelines.warehouse.read import (
    SyncStart,
    WarehouseError,
    sync_start,
)
from transforms.entry_type import EntryTypeRules

__all__ = ["SyncReport", "failure_lines", "run_sync", "summary_lines"]

T = TypeVar("T")


def resolve_range(
    settings: Settings,
    since: str | None,
    until: str | None,
    begins: date | None = None,
    last_synced: date | None = None,
) -> tuple[date, date]:
    """The days to sync for one account: ``--since`` or, without it, its last synced day minus
    the lookback, or on its first sync where its ledger begins (CREDITLENS_LEDGER_START, else
    ``begins``, what history discovery found). A ``--since`` (or CREDITLENS_LEDGER_START) before
    the ledger's first day is read as asked: those days come back empty, at a request a window,
    and the summary says where the ledger begins."""
    asked, last = flag_days(since, until)
    start = settings.ledger_start or begins or datetime.now(UTC).date()
    resume = (
        max(start, last_synced - timedelta(days=settings.lookback_days)) if last_synced else None
    )
    first = asked or resume or start
    if first > last:
        raise UsageError(f"--since {first.isoformat()} is after --until {last.isoformat()}")
    return first, last


def flag_days(since: str | None, until: str | None) -> tuple[date | None, date]:
    """The days --since and --until say on their own (--until defaults to today), refused before
    anything is read or discovered: a mistyped range is one line at once, not after a history
    search of every account."""
    today = datetime.now(UTC).date()
    try:
        last = parse_day(until, "--until") if until else today
        first = parse_day(since, "--since") if since else None
    except ConfigurationError as exc:
        raise BadFlag(str(exc)) from None
    if first and first > last:
        raise BadFlag(f"--since {first.isoformat()} is after --until {last.isoformat()}")
    if last > today:
        raise BadFlag(f"--until {last.isoformat()} is in the future (today is {today})")
    return first, last


def _read_or_nothing(read: Callable[..., T], settings: Settings, nothing: T) -> T:
    """A per-account question to the warehouse; an absent or unreadable one knows ``nothing``
    yet (the sync starts from the beginning, as on a first run)."""
    if not warehouse_exists(settings.warehouse):
        return nothing
    try:
        names = [a.name for a in settings.accounts]
        return read(settings.warehouse, names, lock_timeout_s=settings.lock_timeout_s)
    except WarehouseError:
        return nothing


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
    settings: Settings,
    since: str | None,
    until: str | None,
    accounts: Sequence[str] = (),
    *,
    full_reconcile: bool = False,
) -> SyncReport:
    """One sync, and one publish of the analyst copy at its end whatever it wrote."""
    with publishing_once():
        return _run_sync(settings, since, until, accounts, full_reconcile=full_reconcile)


def _run_sync(
    settings: Settings,
    since: str | None,
    until: str | None,
    accounts: Sequence[str] = (),
    *,
    full_reconcile: bool = False,
) -> SyncReport:
    """Every configured account (or those named), in two runs whatever their number, several
    accounts at once inside each; one account failing fails only itself. ``full_reconcile``
    re-derives each account's whole history (--full-reconcile)."""
    flag_days(since, until)
    settings = settings.selecting(accounts)
    per_account = named_per_account(settings)
    sync_id = f"cli-{uuid.uuid4().hex}"
    with _recorded_if_it_fails(settings, sync_id, "settings"):
        ready, early = _ready_accounts(settings)
    check_writable(settings)
    start = _read_or_nothing(sync_start, settings, SyncStart({}, {}, {}))
    synced = start.last_synced
    with _recorded_if_it_fails(settings, sync_id, "discovery"):
        histories, failed = discover_new(_only(settings, ready), start) if ready else ({}, [])
    failed = [replace(f, step="discovery") for f in failed]  # the step's name in sync_outcomes
    _record(settings, _before_runs(sync_id, early, histories, failed))
    # An account whose history an older discovery cut short syncs again from its first day
    # (unless CREDITLENS_LEDGER_START says where to start: then nothing was cut).
    healed = {n for n, h in histories.items() if h.reaches_back and not settings.ledger_start}
    synced = {n: d for n, d in synced.items() if n not in healed}
    early += failed
    ready = [a for a in ready if a.name not in {f.account for f in failed}]
    # What the warehouse held before discovery, then what discovery just recorded: the same as
    # reading `recorded_first_days` again, without another open of the warehouse.
    beginnings = dict(start.first_found)
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
            early_failures=early, sync_id=sync_id, warehouse=settings.warehouse,
            lock_timeout_s=settings.lock_timeout_s,
        )  # fmt: skip
    first = min(r[0] for r in ranges.values())
    last = max(r[1] for r in ranges.values())
    since_by_account = {n: r[0].isoformat() for n, r in ranges.items() if r[0] > first}
    ledger_config = {"ledger_entries": {"since": since_by_account}} if since_by_account else None
    syncing = covering(_only(settings, ready), first)
    # Disposed when the runs are over: an ephemeral instance holds its in-memory databases'
    # connections open, and one left to the garbage collector is closed in whichever thread
    # collects it, where SQLite refuses and SQLAlchemy logs the refusal's traceback.
    with instance(syncing) as dagster_instance:
        with sync_progress():
            synced = run_job(
                build_definitions(syncing), SYNC_JOB, dagster_instance, first=first, last=last,
                op_config=ledger_config, sync_id=sync_id,
            )  # fmt: skip
        # One run computes the ledger, then the snapshots of the accounts it landed; the report
        # reads each step from its own assets.
        ledger = synced.only({LEDGER.to_user_string()}, checks=True)
        snapshots = synced.only(TABLES, checks=False)
        unlanded = [f.account for f in ledger.account_failures()]
        landed = [a for a in ready if a.name not in unlanded]
        if landed:
            defs = build_definitions(_only(settings, landed))
            reconciliation = run_job(
                defs, JOBS[2], dagster_instance, sync_id=sync_id,
                op_config={"reconciliation": {"full_reconcile": True}} if full_reconcile else None,
            )  # fmt: skip
        else:
            reconciliation = RunOutcome(JOBS[2], True)
    for step in ("snapshots", "reconciliation"):
        _record(settings, outcome_rows(sync_id, step, skipped=unlanded))
    only = names[0] if len(names) == 1 else None
    return SyncReport(
        first, last, ledger, snapshots, reconciliation,
        history=histories.get(only) if only else None,
        begins=beginnings.get(only) if only else None,
        accounts=tuple(names), per_account=per_account, histories=histories,
        beginnings=beginnings, ranges=ranges, early_failures=early, sync_id=sync_id,
        warehouse=settings.warehouse, lock_timeout_s=settings.lock_timeout_s,
    )  # fmt: skip


@contextmanager
def _recorded_if_it_fails(settings: Settings, sync_id: str, step: str) -> Iterator[None]:
    """A step before the runs that fails the whole sync (one account without an accounts file
    fails fast, with its own line) is recorded in sync_outcomes first, as any account's failure
    is, so ``account_status`` and the ``sync_failed`` alert see it; then it is raised as it was.
    A warehouse that cannot take the record (not writable, busy) leaves the failure as it is."""
    try:
        yield
    except Exception as exc:
        if named_per_account(settings):
            raise
        failure = AccountFailure.of(settings.accounts[0].name, step, exc)
        with suppress(Exception):
            _record(settings, _before_runs(sync_id, [], {}, [], failure=failure))
        raise


def _before_runs(
    sync_id: str,
    unready: Sequence[AccountFailure],
    histories: dict[str, History],
    undiscovered: Sequence[AccountFailure],
    *,
    failure: AccountFailure | None = None,
) -> list[dict[str, object]]:
    """What the CLI did before its runs, and the steps an account failing there skips (every
    account of the sync then has a row for the ledger, whatever happened to it). ``failure``:
    the one account's failure that stopped the sync at settings or discovery."""
    if failure is not None:
        later = STEPS[STEPS.index(failure.step) + 1 :]
        rows = outcome_rows(sync_id, failure.step, failed=[failure])
        for step in later:
            rows += outcome_rows(sync_id, step, skipped=[failure.account])
        return rows
    stopped = [f.account for f in unready]
    rows = outcome_rows(sync_id, "settings", failed=unready)
    rows += outcome_rows(sync_id, "discovery", ok=histories, failed=undiscovered, skipped=stopped)
    stopped += [f.account for f in undiscovered]
    for step in ("ledger", "snapshots", "reconciliation"):
        rows += outcome_rows(sync_id, step, skipped=stopped)
    return rows


def _record(settings: Settings, rows: list[dict[str, object]]) -> None:
    """Rows of sync_outcomes the CLI itself writes (only when an account failed or discovery
    ran), published at once: analysts read the copy."""
    if rows:
        warehouse = settings.open_warehouse()
        warehouse.append("sync_outcomes", rows)
        warehouse.publish_analyst_copy()


# The runs a sync makes, per step: the ledger and the snapshots in one (SYNC_JOB), then the
# reconciliation of the accounts that landed.
JOBS = (SYNC_JOB, SYNC_JOB, "reconciliation_run")


def _today() -> tuple[date, date]:
    today = datetime.now(UTC).date()
    return today, today


def _only(settings: Settings, accounts: Sequence[AccountSettings]) -> Settings:
    return settings.selecting([a.name for a in accounts]) if accounts else settings


def _ready_accounts(settings: Settings) -> tuple[list[AccountSettings], list[AccountFailure]]:
    """The accounts whose URL and key variable are set. A single account fails fast, with its
    one line, as it always has; among several (or with an accounts file), one missing key fails
    only its account, its line naming it."""
    if not named_per_account(settings):
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
    settings: Settings, start: SyncStart
) -> tuple[dict[str, History], list[AccountFailure]]:
    """History discovery, once per account: before its first sync, unless turned off
    (CREDITLENS_HISTORY_LIMIT=0), and once more for an account the older rule cut short
    (``opens_at_zero``; ``History.replaces_first_day`` says so). It runs in this process, several
    accounts at once, through the same functions as the ``ledger_history`` asset, so the
    partitions built next start where it found the ledger."""
    synced, recorded, cut_short = start.last_synced, start.first_found, start.cut_short
    new = [
        a
        for a in settings.accounts
        if a.history_limit
        and (a.name in cut_short or (a.name not in recorded and a.name not in synced))
    ]
    if not new:
        return {}, []
    rules = EntryTypeRules(debit_pattern=settings.debit_type_pattern)
    outcomes = discover_histories(new, rules, settings.account_concurrency)
    found = {
        account.name: replace(history, replaces_first_day=cut_short.get(account.name))
        for account, history in succeeded(outcomes)
    }
    if not named_per_account(settings) and outcomes[0].exception is not None:
        raise outcomes[0].exception
    if found:
        record_histories(settings.open_warehouse(), list(found.values()), f"cli-{uuid.uuid4().hex}")
        record_discovery(settings, list(found.values()), len(new))
    return found, failures(outcomes)
