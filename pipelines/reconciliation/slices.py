"""Slices of an account's ledger: runs of whole UTC days, reconciled one after the other.

Reconciliation holds one slice in memory, never the ledger. A slice is whole days, so entries
sharing a createdAt (a tie group) and each day of `daily_balance` stay in one slice. A slice
also ends only on a day whose last createdAt holds a single entry: that entry's place in the
chain is then fixed whatever the orders chosen around it, so the slices on either side of it
cannot influence each other (see `chain_carry`). A day ending in a tie is joined to the next day.
The plan comes from one cheap query (entries per day); each slice is read with a range predicate
on created_at.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol

import polars as pl

SLICE_ENTRIES = 100_000

# Only what the rules read: descriptions can be 100 KB each, and DuckDB decompresses a stored
# vector of such text whole, which alone would exceed the reconciliation's memory bound.
LEDGER_COLUMNS = (
    "account, entry_id, created_at, entry_type, amount, channel, agent_id, campaign_id, "
    "balance_after"
)

# Entries per UTC day of each account from its own first instant, and how many share the day's
# last createdAt: one query for every account. Grouping by day only, then joining back on the
# days' last instants, keeps DuckDB's hash tables at one row per account and day.
DAYS_SQL = """
WITH s AS (SELECT unnest(?::VARCHAR[]) AS account, unnest(?::TIMESTAMPTZ[]) AS since),
days AS (
    SELECT e.account, CAST(e.created_at AS DATE) AS day, count(*) AS entries,
        max(e.created_at) AS closing_at
    FROM ledger_entries AS e JOIN s ON e.account = s.account AND e.created_at >= s.since
    GROUP BY ALL
)
SELECT d.account, d.day, d.entries, count(*) AS closing
FROM days AS d JOIN ledger_entries AS e
    ON e.account = d.account AND e.created_at = d.closing_at
WHERE e.created_at >= (SELECT min(since) FROM s)
GROUP BY d.account, d.day, d.entries
ORDER BY d.account, d.day
"""


class Reader(Protocol):
    def read(self, sql: str, params: list[Any] | None = None) -> pl.DataFrame: ...


@dataclass(frozen=True)
class LedgerDay:
    day: date
    entries: int
    closing_ties: int  # entries at the day's last createdAt


@dataclass(frozen=True)
class LedgerSlice:
    first_day: date
    last_day: date
    entries: int

    @property
    def start(self) -> datetime:
        return datetime.combine(self.first_day, time(), UTC)

    @property
    def end(self) -> datetime:
        """Exclusive: midnight after the last day."""
        return datetime.combine(self.last_day + timedelta(days=1), time(), UTC)


def plan_slices(days: Sequence[LedgerDay], slice_entries: int | None) -> list[LedgerSlice]:
    """Consecutive days grouped into slices of at most `slice_entries` entries where possible.

    A day larger than the limit is a slice of its own; a slice grows past the limit only when its
    last day ends in a tie group (it cannot end there). None means one slice: the whole ledger.
    """
    if slice_entries is not None and slice_entries < 1:
        raise ValueError("slice_entries must be at least 1")
    slices: list[LedgerSlice] = []
    current: list[LedgerDay] = []
    size = 0
    for day in days:
        full = slice_entries is not None and size + day.entries > slice_entries
        if current and full and current[-1].closing_ties == 1:
            slices.append(_slice(current, size))
            current, size = [], 0
        current.append(day)
        size += day.entries
    if current:
        slices.append(_slice(current, size))
    return slices


def _slice(days: list[LedgerDay], size: int) -> LedgerSlice:
    return LedgerSlice(days[0].day, days[-1].day, size)


# Before any createdAt: the lower bound of a whole-ledger plan.
EVER = datetime(1, 1, 1, tzinfo=UTC)


def ledger_days(source: Reader, account: str, since: datetime | None = None) -> list[LedgerDay]:
    """The account's days from `since` on (every day when None): an incremental reconciliation
    plans only the days it rewrites."""
    return ledger_days_of(source, {account: since})[account]


def ledger_days_of(
    source: Reader, since: Mapping[str, datetime | None]
) -> dict[str, list[LedgerDay]]:
    """``ledger_days`` of every account at once, each from its own instant."""
    if not since:
        return {}
    names = list(since)
    starts = [EVER if since[a] is None else since[a] for a in names]
    found: dict[str, list[LedgerDay]] = {a: [] for a in names}
    for account, d, n, c in source.read(DAYS_SQL, [names, starts]).iter_rows():
        found[account].append(LedgerDay(d, n, c))
    return found


def by_account(frame: pl.DataFrame) -> Callable[[str], pl.DataFrame]:
    """One account's rows of a frame read for many (the frame's empty shape when it has none):
    what every read shared by a run's accounts hands each account's pass."""
    parts = {
        str(key[0]): part
        for key, part in frame.partition_by("account", as_dict=True, maintain_order=True).items()
    }
    empty = frame.clear()
    return lambda account: parts.get(account, empty)


def read_slice(
    source: Reader, account: str, piece: LedgerSlice, columns: str = LEDGER_COLUMNS
) -> pl.DataFrame:
    return source.read(
        f"SELECT {columns} FROM ledger_entries "
        "WHERE account = ? AND created_at >= ? AND created_at < ?",
        [account, piece.start, piece.end],
    )
