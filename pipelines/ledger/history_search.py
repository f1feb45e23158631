"""History discovery: where a company's ledger begins, found without being told.

The API has no "first entry" call, and the ledger endpoint needs a range of at most 366 days.
A first sync that started from a configured date would silently leave everything before it
behind, so discovery counts every 366-day window from today back to the bound,
``CREDITLENS_HISTORY_LIMIT`` days before today (a page of size 1 tells a window's total: one
request a window, eleven at the default 3660 days). It never stops earlier on a guess: a company
can sit at zero, with no entries at all, for longer than a window, then start again from zero,
and an empty window below entries whose balance before is zero says nothing about what came
before it. (An older rule did stop there; its rows, ``opens_at_zero``, are probed again once.)

Within the earliest non-empty window the first day is found by halving the range (about nine
requests), and that day is read whole to find its first entry. Empty windows between non-empty
ones are quiet periods, reported as such, never taken for the beginning. The rules here are
pure: the probe is handed in, so the search is tested without a server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Any, Protocol

import polars as pl

from transforms.entry_type import EntryTypeRules
from transforms.micros import MONEY
from transforms.normalize import with_signed_amount

WINDOW_DAYS = 366


class Decision(StrEnum):
    """How discovery decided where the history begins (stored in ``ledger_history``)."""

    EVERY_WINDOW = "every_window"
    NO_ENTRIES = "no_entries"
    # Written by the older rule, which stopped early; kept in older rows and documented.
    OPENS_AT_ZERO = "opens_at_zero"
    HISTORY_LIMIT = "history_limit"


class Probe(Protocol):
    """What discovery asks the API: a range's total, and one day's entries as received."""

    def count(self, first: date, last: date) -> int: ...

    def entries_of(self, day: date) -> Sequence[dict[str, Any]]: ...

    @property
    def requests(self) -> int: ...


@dataclass(frozen=True)
class FirstEntry:
    created_at: datetime
    balance_before: Decimal


@dataclass(frozen=True)
class QuietPeriod:
    """Whole windows with no entries, between windows with entries: a company that went silent
    and came back. Its days are those of the empty windows (the silence may be longer)."""

    first: date
    last: date

    def text(self) -> str:
        return f"no entries from {self.first.isoformat()} to {self.last.isoformat()}"


def quiet_text(quiet: Sequence[QuietPeriod]) -> str:
    """The quiet periods as stored in ``ledger_history.quiet_periods``: FIRST..LAST, by "; "."""
    return "; ".join(f"{q.first.isoformat()}..{q.last.isoformat()}" for q in quiet)


@dataclass(frozen=True)
class History:
    """What was found: the first day and entry, the balance before it, how it was decided, and
    what was probed on the way (windows, entries counted, quiet periods)."""

    account: str
    first_day: date | None
    first_entry_at: datetime | None
    opening_balance: Decimal | None
    decided_by: Decision
    searched_back_to: date
    limit_days: int
    requests: int
    windows_probed: int = 0
    entries_counted: int = 0
    quiet: tuple[QuietPeriod, ...] = ()
    # An earlier discovery's first day, when this one probed again an account whose history the
    # older rule had cut short (decided_by opens_at_zero).
    replaces_first_day: date | None = None

    @property
    def reaches_back(self) -> bool:
        """Probed again, it found entries before the first day an older discovery recorded:
        those days were never synced, so the account syncs again from its first day."""
        return (
            self.replaces_first_day is not None
            and self.first_day is not None
            and self.first_day < self.replaces_first_day
        )

    def sentence(self) -> str:
        """One line for the sync summary and the table's ``detail``."""
        if self.first_day is None or self.first_entry_at is None:
            return (
                f"no entries found back to {self.searched_back_to.isoformat()} "
                f"(CREDITLENS_HISTORY_LIMIT={self.limit_days} days; {self.requests} requests)"
            )
        first = self.first_entry_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        if self.decided_by is Decision.OPENS_AT_ZERO:
            why = "an empty window before it and a zero balance before the first entry"
        else:
            why = (
                f"every window probed back to the limit {self.searched_back_to.isoformat()} "
                f"(CREDITLENS_HISTORY_LIMIT={self.limit_days} days)"
            )
        quiet = "".join(f"; quiet period: {q.text()}" for q in self.quiet)
        healed = (
            f"; probed again: an older discovery had stopped at "
            f"{self.replaces_first_day.isoformat()} (opens_at_zero)"
            if self.replaces_first_day is not None
            else ""
        )
        return (
            f"first entry {first}, balance before it {self.opening_balance}; decided by {why}"
            f"{quiet}{healed} ({self.requests} requests)"
        )


def discover(
    probe: Probe,
    *,
    account: str,
    today: date,
    limit_days: int,
    opening_of: Callable[[Sequence[dict[str, Any]]], FirstEntry | None],
) -> History:
    """Counts every window from ``today`` back to the bound, then finds the first entry in the
    earliest window that has any."""
    floor = today - timedelta(days=limit_days)
    windows: list[tuple[date, date, int]] = []  # newest first
    last = today
    while last >= floor:
        first = max(floor, last - timedelta(days=WINDOW_DAYS - 1))
        windows.append((first, last, probe.count(first, last)))
        last = first - timedelta(days=1)
    counted = sum(n for _, _, n in windows)
    found = [(first, last) for first, last, n in windows if n]
    if not found:
        return History(
            account, None, None, None, Decision.NO_ENTRIES, floor, limit_days, probe.requests,
            windows_probed=len(windows),
        )  # fmt: skip
    day, entry = _first_entry(probe, found[-1], opening_of)
    return History(
        account=account,
        first_day=day,
        first_entry_at=entry.created_at if entry else None,
        opening_balance=entry.balance_before if entry else None,
        decided_by=Decision.EVERY_WINDOW,
        searched_back_to=floor,
        limit_days=limit_days,
        requests=probe.requests,
        windows_probed=len(windows),
        entries_counted=counted,
        quiet=quiet_periods(windows),
    )


def quiet_periods(windows: Sequence[tuple[date, date, int]]) -> tuple[QuietPeriod, ...]:
    """Runs of empty windows with entries on both sides (those below the earliest entries are
    before the beginning, those above the latest are merely recent silence)."""
    periods: list[QuietPeriod] = []
    seen_entries = False
    run: list[tuple[date, date]] = []
    for first, last, count in sorted(windows):
        if not count:
            run.append((first, last))
            continue
        if seen_entries and run:
            periods.append(QuietPeriod(run[0][0], run[-1][1]))
        seen_entries, run = True, []
    return tuple(periods)


def _first_entry(
    probe: Probe,
    window: tuple[date, date],
    opening_of: Callable[[Sequence[dict[str, Any]]], FirstEntry | None],
) -> tuple[date, FirstEntry | None]:
    """The first day of ``window`` with entries (by halving: the count of a prefix says on
    which side it is), and that day's first entry."""
    low, high = window
    while low < high:
        middle = low + (high - low) // 2
        if probe.count(window[0], middle):
            high = middle
        else:
            low = middle + timedelta(days=1)
    return low, opening_of(probe.entries_of(low))


def first_entry(
    entries: Sequence[dict[str, Any]], convention: str, rules: EntryTypeRules
) -> FirstEntry | None:
    """The earliest entry of a day as received and the balance before it.

    Entries sharing the earliest createdAt are ordered by the chain: the first is the one whose
    balance before no other of them ends on. Under ``infer`` the balance before is zero when
    either convention makes it so. An entry this cannot read is left to the sync, which
    quarantines it with its reason.
    """
    rows = [row for row in map(_readable, entries) if row is not None]
    if not rows:
        return None
    earliest = min(row["created_at"] for row in rows)
    tied = pl.DataFrame(
        [row for row in rows if row["created_at"] == earliest],
        schema={"created_at": pl.Datetime("us", "UTC"), "entry_type": pl.Utf8, "amount": MONEY,
                "balance_after": MONEY},
    )  # fmt: skip
    conventions = ("signed", "unsigned") if convention == "infer" else (convention,)
    befores = [
        (tied["balance_after"] - with_signed_amount(tied, c, rules)["signed_amount"]).to_list()  # type: ignore[arg-type]
        for c in conventions
    ]
    ends = set(tied["balance_after"].to_list())
    for index in range(tied.height):
        candidates = [b[index] for b in befores]
        if any(c == 0 for c in candidates):
            return FirstEntry(earliest, Decimal(0))
    for index in range(tied.height):
        if befores[0][index] not in ends:
            return FirstEntry(earliest, Decimal(befores[0][index]))
    return FirstEntry(earliest, Decimal(befores[0][0]))


def _readable(entry: dict[str, Any]) -> dict[str, Any] | None:
    try:
        created = datetime.fromisoformat(str(entry["createdAt"]).replace("Z", "+00:00"))
        return {
            "created_at": (created if created.tzinfo else created.replace(tzinfo=UTC)).astimezone(
                UTC
            ),
            "entry_type": str(entry["type"]),
            "amount": Decimal(str(entry["amount"])),
            "balance_after": Decimal(str(entry["balanceAfter"])),
        }
    except (KeyError, TypeError, ValueError, InvalidOperation):
        return None
