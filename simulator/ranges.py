"""The ledger's query rules: required, inclusive, ordered range of at most 366 days; paging bounds.

Errors name the parameter and the rule (`detail` "<parameter>: <rule>"), checked in the order
start, end, pageNumber, pageSize; every violation is also listed under `errors`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime

from simulator.timefmt import MS_PER_DAY, day_number, dt_to_us

MAX_SPAN_DAYS = 366
MAX_PAGE_NUMBER = 2_147_483_647
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_INT = re.compile(r"[+-]?[0-9]+")
_SPAN_US = MAX_SPAN_DAYS * 86_400 * 1_000_000


@dataclass(frozen=True)
class LedgerQuery:
    start_ms: int  # first included millisecond
    end_ms: int  # last included millisecond
    page_number: int
    page_size: int


@dataclass
class QueryError(Exception):
    errors: dict[str, list[str]] = field(default_factory=dict)

    def add(self, param: str, rule: str) -> None:
        self.errors.setdefault(param, []).append(rule)

    @property
    def detail(self) -> str:
        param, rules = next(iter(self.errors.items()))
        return f"{param}: {rules[0]}"


def _day_bound(value: str) -> int | None:
    """A YYYY-MM-DD date as its UTC day number; None when it is not one."""
    if not _DATE.fullmatch(value):
        return None
    try:
        return day_number(date.fromisoformat(value))
    except ValueError:
        return None


def _instant_bound(value: str) -> int | None:
    """Any ISO 8601 / RFC 3339 date-time with an offset (lowercase t/z and a space allowed), as
    microseconds since the epoch; None when it is not one."""
    if not value.isascii():
        return None
    try:
        parsed = datetime.fromisoformat(value.upper())
    except ValueError:
        return None
    return dt_to_us(parsed) if parsed.tzinfo is not None else None


# Per range format: how a bound is read, and the rule a bound that does not read breaks.
_DAY_BOUNDS = (_day_bound, "must be an ISO 8601 date (YYYY-MM-DD)")
_INSTANT_BOUNDS = (_instant_bound, "must be an ISO 8601 date-time with a UTC offset or Z")


def _parse_int(
    params: Mapping[str, str], name: str, default: int, high: int, error: QueryError
) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    if not _INT.fullmatch(raw):
        error.add(name, "must be an integer")
        return default
    digits = raw.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 12:  # surely out of range; int() would refuse 4300+ digits anyway
        error.add(name, f"must be between 1 and {high}")
        return default
    value = -int(digits) if raw.startswith("-") else int(digits)
    if not 1 <= value <= high:
        error.add(name, f"must be between 1 and {high}")
    return value


def parse_ledger_query(
    params: Mapping[str, str], names: tuple[str, str], range_format: str
) -> LedgerQuery:
    error = QueryError()
    start_name, end_name = names
    parse_bound, bound_rule = _DAY_BOUNDS if range_format == "date" else _INSTANT_BOUNDS
    bounds: list[int | None] = []
    for name in names:
        raw = params.get(name)
        bound = parse_bound(raw) if raw else None
        if bound is None:
            error.add(name, bound_rule if raw else "is required")
        bounds.append(bound)
    start, end = bounds
    if start is not None and end is not None:
        if end < start:
            error.add(end_name, f"must not precede {start_name} (the range must be ordered)")
        else:
            # Dates count days inclusively (2024-01-01..2024-12-31 is 366 days); date-times
            # measure end - start, so the inclusive end 2024-12-31T23:59:59.999999Z also fits.
            too_long = (
                end - start + 1 > MAX_SPAN_DAYS
                if range_format == "date"
                else (end - start > _SPAN_US)
            )
            if too_long:
                error.add(end_name, f"the range may not span more than {MAX_SPAN_DAYS} days")
    page_number = _parse_int(params, "pageNumber", 1, MAX_PAGE_NUMBER, error)
    page_size = _parse_int(params, "pageSize", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, error)
    if error.errors:
        raise error
    assert start is not None and end is not None
    if range_format == "date":
        return LedgerQuery(start * MS_PER_DAY, (end + 1) * MS_PER_DAY - 1, page_number, page_size)
    return LedgerQuery(-(-start // 1000), end // 1000, page_number, page_size)
