"""The month close, in one place: what a closed statement is, the close and restatement rules,
and the close check that applies them to the warehouse (docs/statements.md states the rules for
users).

A close is frozen: its figures are the month as the data stood at ``data_as_of``, and its
``content_hash`` is over those figures only, so the same data closed twice hashes the same and a
restatement is exactly "the figures changed". Version 1 is the close; each restatement is the
next version, with the line-by-line changes that made it.

The figures are the reconciliation's (``monthly_statement``, ``statement_lines``, the enriched
ledger's totals), read as they are: this module never re-derives the balance equation, it only
freezes it and compares one frozen version with the month as it stands now.

The check runs after each sync (the CLI's and Dagster's) and daily, so it must be idempotent:
the same data closes nothing new and restates nothing. An account whose latest sync was not
reconciled yet (or whose reconciliation failed) is left for the next check: its statement would
be the ledger before that sync.
"""

from __future__ import annotations

import calendar
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

from pipelines.config.settings import Settings
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.statement_read import stored_version
from pipelines.warehouse.statement_store import StatementStore, StoredVersion, open_statements
from pipelines.warehouse.writer import Warehouse
from transforms.aggregate import STATEMENT_MONEY_COLUMNS
from transforms.entry_type import CATEGORIES

# What a closed statement is.

Dimension = Literal["agent", "campaign", "channel"]


@dataclass(frozen=True)
class StatementLine:
    """One line of the statement: a summary line (``opening``, ``debits`` ... ``closing``, the
    names of ``transforms.aggregate.STATEMENT_MONEY_COLUMNS``) when ``entry_type`` is None, else
    one entry type's movements within its category (the ``statement_lines`` view's rows)."""

    name: str
    amount: Decimal
    entries: int
    entry_type: str | None = None


@dataclass(frozen=True)
class DimensionTotal:
    """The month's movements of one agent, campaign or channel (signed: usage is negative under
    the signed convention); ``value`` None is the entries without one."""

    dimension: Dimension
    value: str | None
    amount: Decimal
    entries: int


@dataclass(frozen=True)
class ClosedStatement:
    account: str
    month: date  # first day of the UTC month
    version: int  # 1: the close; 2, 3, ...: restatements
    lines: tuple[StatementLine, ...]
    totals: tuple[DimensionTotal, ...]
    content_hash: str
    data_as_of: datetime  # the latest sync whose data the figures are (UTC)
    closed_at: datetime  # when this version was recorded (UTC)

    def line(self, name: str) -> Decimal:
        """A summary line's amount (``opening``, ``closing``, ``hidden_movements`` ...)."""
        for line in self.lines:
            if line.entry_type is None and line.name == name:
                return line.amount
        raise KeyError(name)


@dataclass(frozen=True)
class LineChange:
    """One figure of a restated month: what was issued, what it is now, and why it moved."""

    name: str  # the line's name, or "agent agt_1" / "channel voice" for a dimension total
    was: Decimal
    now: Decimal
    why: str  # "late entries", "a hidden movement found in that month", ...

    @property
    def difference(self) -> Decimal:
        return self.now - self.was


@dataclass(frozen=True)
class Restatement:
    previous: ClosedStatement
    current: ClosedStatement
    changes: tuple[LineChange, ...]


# The close and restatement rules (pure).

# A category's summary line (statement_lines' category -> monthly_statement's column).
CATEGORY_LINE = dict(zip(CATEGORIES, STATEMENT_MONEY_COLUMNS[1:-2], strict=True))
LATE = "late entries"
HIDDEN = "a hidden movement found in that month"
EARLIER = "an earlier month changed"
RECONCILED = "reconciliation changed"
SIX = Decimal("0.000001")


def last_day(month: date) -> date:
    return month.replace(day=calendar.monthrange(month.year, month.month)[1])


def closable(month: date, covered: date, close_after_days: int) -> bool:
    """A month closes once a sync covered its last day plus the grace period: entries of the
    last day keep arriving for a while after it."""
    return last_day(month) + timedelta(days=close_after_days) <= covered


@dataclass(frozen=True)
class MonthFigures:
    """One account's month as the warehouse has it now (its rows, as read)."""

    account: str
    month: date
    summary: Mapping[str, Any]  # monthly_statement's row: the money columns and entries
    lines: Sequence[tuple[str, str, Decimal, int]]  # (category, entry_type, amount, entries)
    totals: Sequence[tuple[str, str | None, Decimal, int]]  # (dimension, value, amount, entries)


def content_hash(lines: Iterable[StatementLine], totals: Iterable[DimensionTotal]) -> str:
    """Over the figures only (never when they were read), in a fixed order and scale: the same
    month closed twice from the same data hashes the same."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(
            f"L|{line.name}|{line.entry_type or ''}|{line.amount.quantize(SIX)}|{line.entries}\n"
            .encode()
        )  # fmt: skip
    for total in totals:
        value = "\0" if total.value is None else total.value  # None is not the text "None"
        digest.update(
            f"T|{total.dimension}|{value}|{total.amount.quantize(SIX)}|{total.entries}\n".encode()
        )
    return digest.hexdigest()


def statement(
    figures: MonthFigures, version: int, data_as_of: datetime, closed_at: datetime
) -> ClosedStatement:
    """The month's statement: the summary lines in the equation's order, each category's
    entry-type lines after it, and the totals sorted, so equal data gives equal versions."""
    by_category: dict[str, list[tuple[str, Decimal, int]]] = {}
    for category, entry_type, amount, entries in figures.lines:
        by_category.setdefault(category, []).append((entry_type, Decimal(amount), int(entries)))
    lines: list[StatementLine] = []
    for name in STATEMENT_MONEY_COLUMNS:
        category = next((c for c, line in CATEGORY_LINE.items() if line == name), None)
        typed = sorted(by_category.get(category, [])) if category else []
        count = sum(n for _, _, n in typed)
        lines.append(StatementLine(name, Decimal(figures.summary[name]), count))
        # An entry-type line is named by the summary line it makes up ("debits", "Usage").
        lines += [StatementLine(name, a, n, t) for t, a, n in typed]
    totals = tuple(
        sorted(
            (DimensionTotal(d, v, Decimal(a), int(n)) for d, v, a, n in figures.totals),  # type: ignore[arg-type]
            key=lambda t: (t.dimension, t.value is None, t.value or ""),
        )
    )
    return ClosedStatement(
        account=figures.account,
        month=figures.month,
        version=version,
        lines=tuple(lines),
        totals=totals,
        content_hash=content_hash(lines, totals),
        data_as_of=data_as_of,
        closed_at=closed_at,
    )


def _line_key(line: StatementLine) -> str:
    return line.name if line.entry_type is None else f"{line.name} {line.entry_type}"


REMOVED = "entries removed"


def _counted(was: int, now: int) -> str:
    more = now - was
    if more == 0:
        return LATE + " (amounts changed)"
    if now == 0:  # the platform no longer serves the line's entries
        return f"{REMOVED} (all {was})"
    word = "entry" if abs(more) == 1 else "entries"
    return f"{LATE} ({abs(more)} {'more' if more > 0 else 'fewer'} {word})"


def changes(previous: ClosedStatement, current: ClosedStatement) -> tuple[LineChange, ...]:
    """Every figure that moved, line by line, with why. The closing's why is the whys of the
    lines that moved it; an opening moves only when an earlier month did."""
    was = {_line_key(x): x for x in previous.lines}
    now = {_line_key(x): x for x in current.lines}
    found: list[LineChange] = []
    for key in [*was, *(k for k in now if k not in was)]:
        before, after = was.get(key), now.get(key)
        if key in ("opening", "closing"):
            continue
        amount_was = before.amount if before else Decimal(0)
        amount_now = after.amount if after else Decimal(0)
        entries_was = before.entries if before else 0
        entries_now = after.entries if after else 0
        if amount_was == amount_now and entries_was == entries_now:
            continue
        if key == "hidden_movements":
            why = HIDDEN if amount_now != 0 else "a hidden movement of that month no longer found"
        else:
            why = _counted(entries_was, entries_now)
        if amount_was == amount_now:
            # Same amount, other entries (a zero-amount entry arrived): still a change of count.
            counts = Decimal(entries_was), Decimal(entries_now)
            found.append(LineChange(f"{key} entries", *counts, why))
        else:
            found.append(LineChange(key, amount_was, amount_now, why))
    head: list[LineChange] = []
    if previous.line("opening") != current.line("opening"):
        head.append(
            LineChange("opening", previous.line("opening"), current.line("opening"), EARLIER)
        )
    if previous.line("closing") != current.line("closing"):
        whys = "; ".join(dict.fromkeys(c.why for c in [*head, *found])) or RECONCILED
        found.append(LineChange("closing", previous.line("closing"), current.line("closing"), whys))
    found += _total_changes(previous, current)
    return tuple(head + found)


def _total_changes(previous: ClosedStatement, current: ClosedStatement) -> list[LineChange]:
    was = {(t.dimension, t.value): t for t in previous.totals}
    now = {(t.dimension, t.value): t for t in current.totals}
    out = []
    for key in [*was, *(k for k in now if k not in was)]:
        before, after = was.get(key), now.get(key)
        a0, a1 = (before.amount if before else Decimal(0)), (after.amount if after else Decimal(0))
        n0, n1 = (before.entries if before else 0), (after.entries if after else 0)
        if a0 == a1 and n0 == n1:
            continue
        name = f"{key[0]} {key[1] if key[1] is not None else '(none)'}"
        out.append(LineChange(name, a0, a1, _counted(n0, n1) if n0 != n1 else RECONCILED))
    return out


def restated(previous: ClosedStatement, figures: MonthFigures, data_as_of: datetime,
             now: datetime) -> Restatement | None:  # fmt: skip
    """The month's next version when its figures moved since ``previous``; None when the same."""
    current = statement(figures, previous.version + 1, data_as_of, now)
    if current.content_hash == previous.content_hash:
        return None
    return Restatement(previous, current, changes(previous, current))


def first_version(figures: MonthFigures, data_as_of: datetime, now: datetime) -> ClosedStatement:
    return statement(figures, 1, data_as_of, now)


# The close check: the rules applied to the warehouse, in one transaction.


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
    if not accounts or not warehouse_exists(warehouse.path):
        return result
    with open_statements(warehouse.path, warehouse.lock_timeout_s) as store:
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


# A stored close read back as the statement (and restatement) it was, for its messages.

# A stored close, its restatement when it is one: what a message's files are rendered from.
Loaded = tuple[ClosedStatement, Restatement | None]
Loader = Callable[[str, date, int], Loaded | None]


def load_close(warehouse: Warehouse, account: str, month: date, version: int) -> Loaded | None:
    """The version, and for a restatement (version 2 on) what it restated and how."""

    def read(number: int) -> ClosedStatement | None:
        found = stored_version(warehouse.path, warehouse.lock_timeout_s, account, month, number)
        return None if found is None else stored_statement(found)

    current = read(version)
    if current is None:
        return None
    previous = read(version - 1) if version > 1 else None
    if previous is None:
        return current, None
    return current, Restatement(previous, current, changes(previous, current))


def stored_loader(warehouse: Warehouse) -> Loader:
    """``load_close`` of this warehouse."""
    return lambda account, month, version: load_close(warehouse, account, month, version)
