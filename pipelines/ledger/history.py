"""History discovery: where a company's ledger begins, found without being told.

The API has no "first entry" call, and the ledger endpoint needs a range of at most 366 days.
A first sync that started from a configured date would silently leave everything before it
behind, so discovery probes back from today one window at a time (a page of size 1 tells a
window's total), and stops on evidence rather than on a guess:

- an empty window reached below entries, and the earliest entry's balance before it (its
  balanceAfter minus its signed amount) is zero: nothing can precede a ledger that opens at zero;
- or the bound, ``CREDITLENS_HISTORY_LIMIT`` days before today, so a dead key cannot probe
  forever (then a non-zero opening balance is reported, never hidden).

Within the earliest non-empty window the first day is found by halving the range (about nine
requests), and that day is read whole to find its first entry. The rules here are pure: the
probe is handed in, so the search is tested without a server.
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

    OPENS_AT_ZERO = "opens_at_zero"
    HISTORY_LIMIT = "history_limit"
    NO_ENTRIES = "no_entries"


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
class History:
    """What was found: the first day and entry, the balance before it, and how it was decided."""

    account: str
    first_day: date | None
    first_entry_at: datetime | None
    opening_balance: Decimal | None
    decided_by: Decision
    searched_back_to: date
    limit_days: int
    requests: int

    def sentence(self) -> str:
        """One line for the sync summary and the table's ``detail``."""
        if self.first_day is None or self.first_entry_at is None:
            return (
                f"no entries found back to {self.searched_back_to.isoformat()} "
                f"(CREDITLENS_HISTORY_LIMIT={self.limit_days} days; {self.requests} requests)"
            )
        first = self.first_entry_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        opening = self.opening_balance
        if self.decided_by is Decision.OPENS_AT_ZERO:
            why = "an empty window before it and a zero balance before the first entry"
        else:
            why = (
                f"searched back to the limit {self.searched_back_to.isoformat()} "
                f"(CREDITLENS_HISTORY_LIMIT={self.limit_days} days)"
            )
        return (
            f"first entry {first}, balance before it {opening}; decided by {why} "
            f"({self.requests} requests)"
        )


def discover(
    probe: Probe,
    *,
    account: str,
    today: date,
    limit_days: int,
    opening_of: Callable[[Sequence[dict[str, Any]]], FirstEntry | None],
) -> History:
    """Probes back from ``today`` until the evidence or the bound says where history begins."""
    floor = today - timedelta(days=limit_days)
    last = today
    earliest: tuple[date, date] | None = None
    found: tuple[date, FirstEntry | None] | None = None
    decision = Decision.HISTORY_LIMIT
    searched = floor
    while last >= floor:
        first = max(floor, last - timedelta(days=WINDOW_DAYS - 1))
        searched = first
        if probe.count(first, last):
            earliest, found = (first, last), None
        elif earliest is not None:
            if found is None:
                found = _first_entry(probe, earliest, opening_of)
            entry = found[1]
            if entry is not None and entry.balance_before == 0:
                decision = Decision.OPENS_AT_ZERO
                break
        last = first - timedelta(days=1)
    if earliest is None:
        return History(account, None, None, None, Decision.NO_ENTRIES, floor, limit_days, 0)
    if found is None:
        found = _first_entry(probe, earliest, opening_of)
    day, entry = found
    return History(
        account=account,
        first_day=day,
        first_entry_at=entry.created_at if entry else None,
        opening_balance=entry.balance_before if entry else None,
        decided_by=decision,
        searched_back_to=searched,
        limit_days=limit_days,
        requests=probe.requests,
    )


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
