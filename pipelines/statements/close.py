"""A close check: every closable month not yet closed is closed, every closed month is compared
with the month as it stands now and restated when a figure moved, in one transaction.

The check runs after each sync (the CLI's and Dagster's) and daily, so it must be idempotent:
the same data closes nothing new and restates nothing (the content hash is over the figures
only). An account whose latest sync was not reconciled yet (or whose reconciliation failed) is
left for the next check: its statement would be the ledger before that sync.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from pipelines.config.settings import Settings
from pipelines.statements.closed import (
    ClosedStatement,
    DimensionTotal,
    Restatement,
    StatementLine,
)
from pipelines.statements.closing import MonthFigures, closable, first_version, last_day, restated
from pipelines.warehouse.statement_store import StatementStore, StoredVersion, closing
from pipelines.warehouse.writer import Warehouse
from transforms.aggregate import STATEMENT_MONEY_COLUMNS


@dataclass
class CloseResult:
    issued: list[ClosedStatement] = field(default_factory=list)
    restated: list[Restatement] = field(default_factory=list)
    # Accounts this check closed several months of at once (their first close, a backlog after
    # a pause, the rest after a month closed by hand): only the latest of them is sent.
    first_close_accounts: set[str] = field(default_factory=set)
    # Months asked for by hand (--month) that are closed already: their latest versions.
    already_closed: list[ClosedStatement] = field(default_factory=list)
    # Why a month asked for by hand was not closed, one line each.
    refused: list[str] = field(default_factory=list)
    # Accounts with nothing in a month asked for by hand: nothing to close, not a failure.
    empty: list[str] = field(default_factory=list)
    # Closed versions found without their messages (left by an earlier version): queued now.
    unsent: list[ClosedStatement] = field(default_factory=list)
    # (event_id, channel) of every message this check queued, in the close's transaction.
    queued: list[tuple[str, str]] = field(default_factory=list)
    # What the check looked at, for a run that closes nothing to say so.
    checked: str = ""

    @property
    def changed(self) -> bool:
        return bool(self.issued or self.restated)

    def lines(self) -> list[str]:
        """One line per close and restatement, as `creditlens sync` and `close` print them."""
        out: list[str] = []
        by_account: dict[str, list[ClosedStatement]] = {}
        for s in self.issued:
            by_account.setdefault(s.account, []).append(s)
        for account, closed in by_account.items():
            if account in self.first_close_accounts and len(closed) > 1:
                # Several months closed at once (an account's whole past): one line.
                out.append(
                    f"statements closed: {account} {closed[0].month:%Y-%m} to "
                    f"{closed[-1].month:%Y-%m} ({len(closed)} months at once: the latest is "
                    "sent, `creditlens statements list` shows them all)"
                )
            else:
                out += [f"statement closed: {account} {s.month:%Y-%m}" for s in closed]
        for r in self.restated:
            s = r.current
            was, now = r.previous.line("closing"), s.line("closing")
            out.append(
                f"statement restated: {s.account} {s.month:%Y-%m} (version {s.version}, "
                f"closing was {was}, now {now})"
            )
        return out


def stored_statement(stored: StoredVersion) -> ClosedStatement:
    row = stored.row
    return ClosedStatement(
        account=row["account"],
        month=row["month"],
        version=int(row["version"]),
        lines=tuple(StatementLine(n, a, int(c), t) for _, n, t, a, c in stored.lines),
        totals=tuple(DimensionTotal(d, v, a, int(c)) for d, v, a, c in stored.totals),  # type: ignore[arg-type]
        content_hash=row["content_hash"],
        data_as_of=row["data_as_of"],
        closed_at=row["closed_at"],
    )


def _older(
    store: StatementStore,
    latest: dict[tuple[str, date], StoredVersion],
    wanted: set[tuple[str, date, int]],
) -> dict[tuple[str, date], StoredVersion]:
    """The latest versions of months before this check's range that still wait to be sent."""
    first: dict[str, date] = {}
    for account, m, _ in wanted:
        if (account, m) not in latest:
            first[account] = min(first.get(account, m), m)
    return store.latest(list(first), dict(first)) if first else {}


def _figures(
    store: StatementStore, accounts: Sequence[str], since: dict[str, date | None]
) -> dict[tuple[str, date], MonthFigures]:
    lines: dict[tuple[str, date], list[Any]] = {}
    for account, month, *rest in store.entry_type_lines(accounts, since):
        lines.setdefault((account, month), []).append(tuple(rest))
    totals: dict[tuple[str, date], list[Any]] = {}
    for account, month, *rest in store.totals(accounts, since):
        totals.setdefault((account, month), []).append(tuple(rest))
    return {
        (row["account"], row["month"]): MonthFigures(
            row["account"],
            row["month"],
            row,
            lines.get((row["account"], row["month"]), []),
            totals.get((row["account"], row["month"]), []),
        )
        for row in store.months(accounts, since)
    }


@dataclass
class _Batch:
    """The rows one check appends, table by table (one transaction)."""

    closes: list[dict[str, Any]] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)
    totals: list[dict[str, Any]] = field(default_factory=list)
    restatements: list[dict[str, Any]] = field(default_factory=list)

    def add(self, s: ClosedStatement, first: bool) -> None:
        key = {"account": s.account, "month": s.month, "version": s.version}
        self.closes.append(
            {
                **key,
                **{name: s.line(name) for name in STATEMENT_MONEY_COLUMNS},
                "entries": sum(x.entries for x in s.lines if x.entry_type is None),
                "content_hash": s.content_hash,
                "data_as_of": s.data_as_of,
                "closed_at": s.closed_at,
                "first_close": first,
            }
        )
        self.lines += [
            {**key, "line_no": i, "line": x.name, "entry_type": x.entry_type,
             "amount": x.amount, "entries": x.entries}
            for i, x in enumerate(s.lines, start=1)
        ]  # fmt: skip
        self.totals += [
            {**key, "dimension": t.dimension, "value": t.value, "amount": t.amount,
             "entries": t.entries}
            for t in s.totals
        ]  # fmt: skip

    def restate(self, change: Restatement) -> None:
        self.add(change.current, False)
        s = change.current
        self.restatements += [
            {"account": s.account, "month": s.month, "version": s.version,
             "previous_version": change.previous.version, "line": c.name, "was": c.was,
             "now": c.now, "difference": c.difference, "why": c.why, "restated_at": s.closed_at}
            for c in change.changes
        ]  # fmt: skip


# The messages of a check's closes and restatements: outbox rows, made inside the transaction.
Messages = Callable[[CloseResult], Sequence[dict[str, Any]]]


def check_closes(
    warehouse: Warehouse,
    settings: Settings,
    month: date | None = None,
    now: datetime | None = None,
    messages: Messages | None = None,
    again: bool = False,
) -> CloseResult:
    """Closes and restates for ``settings.accounts`` (only ``month`` when given), recording all
    of it and queueing its ``messages`` in one transaction (``again``: sent ones again)."""
    now = now or datetime.now(UTC)
    result = CloseResult()
    accounts = [a.name for a in settings.accounts]
    grace = {a.name: a.close_after_days for a in settings.accounts}
    if not accounts or not warehouse.path.exists():
        return result
    with closing(warehouse.path, warehouse.lock_timeout_s) as store:
        coverage = store.coverage(accounts)
        # Only the months a reconciliation rewrote since the last check, and those not closed
        # yet (docs/statements.md); a month asked for by hand, that month.
        since = (
            store.months_from(list(coverage)) if month is None else dict.fromkeys(coverage, month)
        )
        figures = _figures(store, list(coverage), since)
        latest = store.latest(list(coverage), since)
        batch = _Batch()
        for (account, m), month_figures in sorted(figures.items()):
            if month is not None and m != month:
                continue
            known = latest.get((account, m))
            cover = coverage[account]
            if known is None:
                if not closable(m, cover.covered, grace[account]):
                    continue
                result.issued.append(first_version(month_figures, cover.data_as_of, now))
                continue
            previous = stored_statement(known)
            change = restated(previous, month_figures, cover.data_as_of, now)
            if change is None:
                if month is not None:
                    result.already_closed.append(previous)
                continue
            result.restated.append(change)
            batch.restate(change)
        for account, m in sorted(set(latest) - set(figures)):
            if month is not None and m != month:
                continue
            previous = stored_statement(latest[(account, m)])
            change = restated(previous, _vanished(previous), coverage[account].data_as_of, now)
            if change is not None:  # every entry of a closed month is gone
                result.restated.append(change)
                batch.restate(change)
        _batches(result, batch)
        if month is not None:
            _refusals(month, accounts, coverage, figures, grace, result, store.failures(accounts))
        store.record(batch.closes, batch.lines, batch.totals, batch.restatements)
        if month is None:
            store.record_check(list(coverage), now)
            recorded = {(c["account"], c["month"], c["version"]) for c in batch.closes}
            wanted = set(store.unsent(list(coverage))) - recorded  # this check's are queued below
            unsent = {**latest, **_older(store, latest, wanted)}
            result.unsent = [
                stored_statement(v) for k, v in unsent.items() if (*k, v.row["version"]) in wanted
            ]
        if messages is not None:
            result.queued = store.queue(messages(result), again)
        result.checked = (
            f"checked {len(figures)} month(s) of {len(coverage)} account(s) "
            f"({len(latest)} closed before)"
        )
    return result


def _batches(result: CloseResult, batch: _Batch) -> None:
    """Records this check's closes: several months of one account closed at once are sent
    latest only (``first_close``), whatever closed them; a single month is sent."""
    per_account: dict[str, int] = {}
    for s in result.issued:
        per_account[s.account] = per_account.get(s.account, 0) + 1
    result.first_close_accounts = {a for a, n in per_account.items() if n > 1}
    latest = {}
    for s in result.issued:
        latest[s.account] = max(latest.get(s.account, s.month), s.month)
    for s in result.issued:  # the latest month of a batch is sent: it is not held back
        batch.add(s, s.account in result.first_close_accounts and s.month != latest[s.account])


def _vanished(previous: ClosedStatement) -> MonthFigures:
    """A closed month whose every entry is gone: no movement, its balance where it opened."""
    opening = previous.line("opening")
    summary: dict[str, Any] = {name: Decimal(0) for name in STATEMENT_MONEY_COLUMNS}
    summary.update(opening=opening, closing=opening, entries=0)
    return MonthFigures(previous.account, previous.month, summary, [], [])


def _refusals(
    month: date,
    accounts: Sequence[str],
    coverage: dict[str, Any],
    figures: dict[tuple[str, date], MonthFigures],
    grace: dict[str, int],
    result: CloseResult,
    failures: dict[str, str],
) -> None:
    """Why each account did not close ``month`` (asked for by hand), in one line each: its
    latest sync's own failure line when that sync failed."""
    done = {s.account for s in [*result.issued, *result.already_closed]}
    done |= {r.current.account for r in result.restated}
    for account in accounts:
        if account in done:
            continue
        what = f"{account} {month:%Y-%m}: not closed"
        if account in failures:
            result.refused.append(
                f"{what}: its latest sync failed ({failures[account]}); fix that, then run "
                f"`creditlens sync --account {account}`"
            )
        elif account not in coverage:
            result.refused.append(
                f"{what}: its latest sync was not reconciled (run `creditlens sync`)"
            )
        elif (account, month) not in figures:
            result.empty.append(f"{account} {month:%Y-%m}: nothing to close: no entry that month")
        else:
            needed = date.fromordinal(last_day(month).toordinal() + grace[account])
            result.refused.append(
                f"{what}: syncs cover up to {coverage[account].covered}, closing needs "
                f"{needed} (close_after_days {grace[account]})"
            )
