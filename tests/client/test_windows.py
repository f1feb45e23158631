"""Window splitting: consecutive, inclusive, never longer than 366 days, leap years included."""

import itertools
from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.api.windows import Window, split_windows


def test_exact_366_days_is_one_window_in_a_leap_year() -> None:
    windows = split_windows(date(2024, 1, 1), date(2024, 12, 31))
    assert windows == [Window(date(2024, 1, 1), date(2024, 12, 31))]
    assert windows[0].days == 366


def test_367_days_split_into_366_and_1() -> None:
    windows = split_windows(date(2024, 1, 1), date(2025, 1, 1))
    assert [w.days for w in windows] == [366, 1]
    assert windows[1] == Window(date(2025, 1, 1), date(2025, 1, 1))


def test_window_crossing_leap_day() -> None:
    # 2023-03-01..2024-02-29 holds the leap day: 366 days, the most one window may span.
    assert [w.days for w in split_windows(date(2023, 3, 1), date(2024, 2, 29))] == [366]
    windows = split_windows(date(2023, 3, 1), date(2024, 3, 1))
    assert [w.days for w in windows] == [366, 1]
    assert windows[0].last == date(2024, 2, 29) and windows[1].first == date(2024, 3, 1)


def test_single_day_and_reversed_range() -> None:
    assert split_windows(date(2025, 5, 5), date(2025, 5, 5)) == [
        Window(date(2025, 5, 5), date(2025, 5, 5))
    ]
    with pytest.raises(ValueError, match="precedes"):
        split_windows(date(2025, 5, 6), date(2025, 5, 5))


def test_datetime_format_is_inclusive_to_the_last_microsecond() -> None:
    start, end = Window(date(2024, 2, 28), date(2024, 2, 29)).query("datetime")
    assert start == "2024-02-28T00:00:00.000000Z"
    assert end == "2024-02-29T23:59:59.999999Z"


@given(
    first=st.dates(min_value=date(1999, 1, 1), max_value=date(2040, 1, 1)),
    length=st.integers(min_value=0, max_value=3000),
    max_days=st.integers(min_value=1, max_value=366),
)
def test_windows_tile_the_range(first: date, length: int, max_days: int) -> None:
    last = first + timedelta(days=length)
    windows = split_windows(first, last, max_days)
    assert windows[0].first == first and windows[-1].last == last
    for a, b in itertools.pairwise(windows):
        assert b.first == a.last + timedelta(days=1)
    assert all(1 <= w.days <= max_days for w in windows)
    assert sum(w.days for w in windows) == length + 1
