"""Splitting a date range into the windows the ledger endpoint accepts.

The API takes an inclusive range of at most 366 days; a longer history is read as consecutive,
non-overlapping inclusive windows, so no day is read twice and none is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from pipelines.api.options import RangeFormat


@dataclass(frozen=True, order=True)
class Window:
    """An inclusive range of UTC days, ``first`` to ``last``."""

    first: date
    last: date

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    def contains(self, day: date) -> bool:
        return self.first <= day <= self.last

    def __str__(self) -> str:
        return f"{self.first.isoformat()}..{self.last.isoformat()}"

    def query(self, fmt: RangeFormat) -> tuple[str, str]:
        """The two range parameter values for this window in the configured format."""
        if fmt == "date":
            return self.first.isoformat(), self.last.isoformat()
        start = datetime.combine(self.first, time.min, tzinfo=UTC)
        end = datetime.combine(self.last, time.max, tzinfo=UTC)
        return _iso_z(start), _iso_z(end)


def _iso_z(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def split_windows(first: date, last: date, max_days: int = 366) -> list[Window]:
    """Consecutive inclusive windows covering ``first..last``, each at most ``max_days`` long."""
    if last < first:
        raise ValueError(f"range end {last.isoformat()} precedes its start {first.isoformat()}")
    if max_days < 1:
        raise ValueError("a window spans at least one day")
    windows = []
    start = first
    while start <= last:
        end = min(last, start + timedelta(days=max_days - 1))
        windows.append(Window(start, end))
        start = end + timedelta(days=1)
    return windows
