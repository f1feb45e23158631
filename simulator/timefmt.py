"""UTC instants as integer epoch milliseconds, and their wire text.

Entries are stored by epoch ms so a date window is two bisects; the text is always
`YYYY-MM-DDTHH:MM:SS.mmmZ` (docs/contracts.md, createdAt text).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

MS_PER_DAY = 86_400_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


def day_number(day: date) -> int:
    """Days since 1970-01-01 (negative before)."""
    return day.toordinal() - _EPOCH_ORDINAL


def day_from_number(n: int) -> date:
    return date.fromordinal(n + _EPOCH_ORDINAL)


def day_start_ms(day: date) -> int:
    return day_number(day) * MS_PER_DAY


def to_utc(dt: datetime) -> datetime:
    """Naive datetimes are taken as UTC: scenario files often omit the Z."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def dt_to_us(dt: datetime) -> int:
    """Epoch microseconds; works for any aware datetime, even near year 1 or 9999."""
    delta = dt - EPOCH if dt.tzinfo is not None else dt.replace(tzinfo=UTC) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def dt_to_ms(dt: datetime) -> int:
    """Floor to the millisecond."""
    return dt_to_us(dt) // 1000


def ms_to_dt(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def ms_to_text(ms: int) -> str:
    days, rem = divmod(ms, MS_PER_DAY)
    prefix = _DAY_TEXT.get(days)
    if prefix is None:
        prefix = _DAY_TEXT[days] = day_text(days)
    return prefix + time_of_day_text(rem)


_DAY_TEXT: dict[int, str] = {}


def day_text(days: int) -> str:
    return day_from_number(days).isoformat() + "T"


_MINUTE_TEXT = [f"{m // 60:02d}:{m % 60:02d}:" for m in range(1440)]
# "SS.mmmZ" of each millisecond of a minute: built when first needed, not at import (46 ms, paid
# by every process that imports the simulator, the CLI's included, most of which never serve).
_ms_of_minute_text: list[str] | None = None


def _ms_texts() -> list[str]:
    global _ms_of_minute_text
    if _ms_of_minute_text is None:  # two threads may both build it: the same list either way
        _ms_of_minute_text = [f"{ms // 1000:02d}.{ms % 1000:03d}Z" for ms in range(60_000)]
    return _ms_of_minute_text


def time_of_day_text(ms_of_day: int) -> str:
    minute, rest = divmod(ms_of_day, 60_000)
    return _MINUTE_TEXT[minute] + _ms_texts()[rest]


def instant_text(dt: datetime) -> str:
    """Snapshot timestamps: seconds precision, milliseconds only when present."""
    dt = to_utc(dt)
    if dt.microsecond:
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def month_start(day: date) -> date:
    return day.replace(day=1)


def next_month_start(day: date) -> date:
    if day.month == 12:
        return date(day.year + 1, 1, 1)
    return date(day.year, day.month + 1, 1)
