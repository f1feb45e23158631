"""From wire entries to typed ledger rows, column by column, with a reason for every reject.

This is the one definition of what a valid ledger entry is, and it lives with the API client
because it is the API's entry format being checked; the fields themselves are declared once in
pipelines/api/ledger_entry.py. The page parser keeps JSON numbers as their exact text, so money is
validated here as text and becomes DECIMAL(18,6) without ever being a float. An entry that breaks
a rule is not dropped: it comes back as a reject with the reason, and the pipeline quarantines it.

Rules (said for users in docs/analysts.md, *Exactly once without ids*; a reject's reason is the
``quarantine`` row's):
- the entry is a JSON object;
- ``createdAt`` is an ISO 8601 date-time (no offset is read as UTC) inside the requested window;
- ``type`` is a non-empty string;
- ``amount`` and ``balanceAfter`` are JSON numbers (or strings holding exactly a JSON number's
  text, ASCII digits; the grammar is pipelines/api/money.py's) with at most 11 integer digits and
  6 decimal places, nothing rounded: they, and the balance before the entry derived from them,
  fit DECIMAL(18,6) exactly;
- ``description``, ``channel``, ``agentId``, ``campaignId`` are strings or null/absent;
  ``hasDescription`` is a boolean or null/absent;
- any other field is kept, as JSON text in ``extra``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from itertools import chain
from typing import Any

import polars as pl

from pipelines.api.json_text import dumps_exact
from pipelines.api.ledger_entry import (
    CREATED_AT,
    ENTRY_FIELDS,
    EXTRA_COLUMN,
    HAS_DESCRIPTION,
    MONEY_PRECISION,
    MONEY_SCALE,
    EntryField,
    Kind,
    fields_of,
)
from pipelines.api.money import (
    ENTRY_INTEGER_DIGITS,
    MAX_SCALE,
    money_text,
    plain_pattern,
    read_money,
)

MONEY = pl.Decimal(MONEY_PRECISION, MONEY_SCALE)
TIMESTAMP = pl.Datetime("us", "UTC")
# DECIMAL(18,6) holds 12 integer digits; entries keep one in reserve (pipelines/api/money.py).
MAX_INTEGER_DIGITS = ENTRY_INTEGER_DIGITS

KNOWN_FIELDS = frozenset(f.wire for f in ENTRY_FIELDS)
_STRINGS = fields_of(Kind.STRING)
_MONEY = fields_of(Kind.MONEY)

_PLAIN_PATTERN = plain_pattern(MAX_INTEGER_DIGITS)


@dataclass(frozen=True)
class Reject:
    """An entry that cannot be landed, with the rule it broke."""

    position: int
    reason: str
    raw: Any


def exact_money(text: Any) -> str | None:
    """The plain text of a money value that fits DECIMAL(18,6) exactly, else None."""
    if not isinstance(text, str):
        return None
    value = read_money(text, MAX_INTEGER_DIGITS)
    return money_text(value) if isinstance(value, Decimal) else None


def _money_reason(field: str, value: Any) -> str:
    if value is None:
        return f"{field} is missing"
    if not isinstance(value, str):
        return f"{field} is {type(value).__name__}, expected a number"
    text = str(value)
    shown = text if len(text) <= 40 else text[:37] + "..."
    problem = read_money(text, MAX_INTEGER_DIGITS)
    if isinstance(problem, Decimal) or problem.out_of_range:
        return (
            f"{field} {shown!r} is not within the ledger's exact range (at most "
            f"{MAX_INTEGER_DIGITS} integer digits and {MAX_SCALE} decimal places, so that it and "
            "the balance before it fit DECIMAL(18,6))"
            + ("" if isinstance(problem, Decimal) else f": it {problem.reason}")
        )
    return f"{field} {shown!r} {problem.reason}"


def parse_created_at(value: Any) -> datetime | None:
    if type(value) is not str:
        return None
    text = value.strip()
    if len(text) < 10 or text[4:5] != "-":
        return None
    try:
        moment = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


@dataclass
class WireColumns:
    """A batch of entries as columns of wire values, before validation.

    Two readers fill it: the generic one from parsed JSON objects (``columns_from_rows``), which
    also notes the entries whose values have the wrong JSON type, and the page decoder's fast path,
    which only hands over pages whose types it has already checked. Validation is the same for
    both, so there is one definition of a valid entry. ``strings`` and ``money`` are keyed by
    column name.
    """

    created: list[Any]
    strings: dict[str, list[Any]]
    money: dict[str, list[Any]]
    flags: list[Any]
    extras: list[str | None] | None = None

    def __len__(self) -> int:
        return len(self.created)

    @staticmethod
    def concat(parts: list[WireColumns]) -> WireColumns:
        if len(parts) == 1:
            return parts[0]

        def joined(pick: Callable[[WireColumns], list[Any]]) -> list[Any]:
            return list(chain.from_iterable(pick(p) for p in parts))

        extras: list[str | None] | None = None
        if any(p.extras is not None for p in parts):
            extras = joined(lambda p: p.extras or [None] * len(p))
        return WireColumns(
            created=joined(lambda p: p.created),
            strings={k: joined(lambda p, k=k: p.strings[k]) for k in parts[0].strings},
            money={k: joined(lambda p, k=k: p.money[k]) for k in parts[0].money},
            flags=joined(lambda p: p.flags),
            extras=extras,
        )


def entries_frame(
    rows: list[Any], first_day: date | None = None, last_day: date | None = None
) -> tuple[pl.DataFrame, list[Reject]]:
    """Typed rows (as ``validate_columns`` types them) and rejects.

    ``len(frame) + len(rejects) == len(rows)``: nothing is dropped.
    """
    columns, reasons = columns_from_rows(rows)
    frame, reasons = validate_columns(columns, reasons, first_day, last_day)
    return frame, [Reject(i, reason, rows[i]) for i, reason in sorted(reasons.items())]


# The JSON type a field of each kind must have when present, and the reason when it has another.
# Money is apart: any text (a JSON number's or a numeric string's) goes on to exact_money, and a
# missing amount is a reject at once.
_WIRE_TYPES: dict[Kind, tuple[type, Callable[[str, Any], str]]] = {
    Kind.STRING: (str, lambda wire, value: f"{wire} is {_json_type(value)}, expected a string"),
    Kind.FLAG: (bool, lambda wire, value: f"{wire} is {_json_type(value)}, expected a boolean"),
    Kind.TIMESTAMP: (str, lambda wire, value: f"{wire} {value!r} is not a date-time"),
}
# An entry's reason is the first rule it breaks, so the order fields are checked in is part of
# what a reject says.
_CHECK_ORDER = (*_STRINGS, *fields_of(Kind.FLAG), *_MONEY, *fields_of(Kind.TIMESTAMP))


def columns_from_rows(rows: list[Any]) -> tuple[WireColumns, dict[int, str]]:
    """The wire columns of parsed JSON objects, and why the entries of the wrong shape are wrong.

    A value of the wrong JSON type becomes null in its column, so validation can go on
    column-wise; its reason is kept.
    """
    reasons: dict[int, str] = {}

    def reject(i: int, reason: str) -> None:
        reasons.setdefault(i, reason)

    for i, row in enumerate(rows):
        if row.__class__ is not dict:
            reject(i, f"entry is {type(row).__name__}, expected an object")
    objects: list[dict[str, Any]] = (
        [row if row.__class__ is dict else {} for row in rows] if reasons else rows
    )

    def column(field: EntryField) -> list[Any]:
        values = [row.get(field.wire) for row in objects]
        if field.kind is Kind.MONEY:
            wrong = [i for i, v in enumerate(values) if not isinstance(v, str)]
            reason = _money_reason
        else:
            expected, reason = _WIRE_TYPES[field.kind]
            wrong = [
                i for i, v in enumerate(values) if v is not None and v.__class__ is not expected
            ]
        for i in wrong:
            reject(i, reason(field.wire, values[i]))
            values[i] = None
        return values

    values = {f.column: column(f) for f in _CHECK_ORDER}

    extras: list[str | None] | None = None
    unknown = set().union(*objects) - KNOWN_FIELDS if objects else set()
    if unknown:
        extras = [None] * len(rows)
        for i, row in enumerate(objects):
            extra = {k: v for k, v in row.items() if k in unknown}
            if extra:
                extras[i] = dumps_exact(extra)
    columns = WireColumns(
        created=values[CREATED_AT.column],
        strings={f.column: values[f.column] for f in _STRINGS},
        money={f.column: values[f.column] for f in _MONEY},
        flags=values[HAS_DESCRIPTION.column],
        extras=extras,
    )
    return columns, reasons


def validate_columns(
    columns: WireColumns,
    reasons: dict[int, str] | None = None,
    first_day: date | None = None,
    last_day: date | None = None,
) -> tuple[pl.DataFrame, dict[int, str]]:
    """Typed rows of the valid entries, and a reason for every other position.

    Column-wise on purpose: a backfill validates millions of entries, so each rule is one
    vectorized pass, and only the rare entry that fails it is looked at one by one for the reason.
    """
    reasons = dict(reasons or {})
    count = len(columns)

    def reject(i: int, reason: str) -> None:
        reasons.setdefault(i, reason)

    created, strings, money, flags = (
        columns.created,
        columns.strings,
        columns.money,
        columns.flags,
    )
    try:
        frame = _text_frame(created, strings, money, flags)
    except UnicodeEncodeError:  # valid JSON can carry lone surrogates; they are not text
        created, flags = list(created), list(flags)
        strings = {k: list(v) for k, v in strings.items()}
        money = {k: list(v) for k, v in money.items()}
        text_columns = {CREATED_AT.wire: created}
        text_columns |= {f.wire: strings[f.column] for f in _STRINGS}
        text_columns |= {f.wire: money[f.column] for f in _MONEY}
        for wire, values in text_columns.items():
            for i, value in enumerate(values):
                if value is not None and not _encodable(value):
                    reject(i, f"{wire} is not valid Unicode (it holds an unpaired surrogate)")
                    values[i] = None
        frame = _text_frame(created, strings, money, flags)

    # The rare values the vectorized pass could not read get a second, exact look.
    created_col = frame[CREATED_AT.column]
    unread = frame.select(
        pl.arg_where(pl.col(CREATED_AT.column).is_null() & pl.col("created_text").is_not_null())
    ).to_series()
    if unread.len():
        moments = [parse_created_at(created[i]) for i in unread]
        for i, moment in zip(unread, moments, strict=True):
            if moment is None:
                reject(i, f"{CREATED_AT.wire} {created[i]!r} is not a date-time")
        created_col = created_col.scatter(unread, pl.Series(moments, dtype=TIMESTAMP))
    for i in frame.select(pl.arg_where(pl.col("created_text").is_null())).to_series():
        reject(i, f"{CREATED_AT.wire} is missing")
    if first_day is not None and last_day is not None:
        day = created_col.dt.date()
        outside = pl.select(pl.arg_where((day < first_day) | (day > last_day))).to_series()
        for i in outside:
            reject(
                i,
                f"{CREATED_AT.wire} {created[i]} is outside the requested window "
                f"{first_day.isoformat()}..{last_day.isoformat()}",
            )
    for field in (f for f in _STRINGS if f.required):
        value = pl.col(field.column)
        blank = frame.select(pl.arg_where(value.is_null() | (value.str.strip_chars() == "")))
        for i in blank.to_series():
            reject(i, f"{field.wire} is missing or empty")

    texts: dict[str, pl.Series] = {}
    for field in _MONEY:
        name, plain = f"{field.column}_text", f"{field.column}_plain"
        column_texts = frame[name]
        odd = frame.select(pl.arg_where(pl.col(plain).not_() & pl.col(name).is_not_null()))
        odd_rows = odd.to_series()
        if odd_rows.len():
            exact = [exact_money(column_texts[i]) for i in odd_rows]
            for i, value in zip(odd_rows, exact, strict=True):
                if value is None:
                    reject(i, _money_reason(field.wire, column_texts[i]))
            column_texts = column_texts.scatter(odd_rows, pl.Series(exact, dtype=pl.String))
        texts[field.column] = column_texts

    read = {CREATED_AT.column: created_col, **texts}
    typed = pl.DataFrame(
        {
            **{
                f.column: read[f.column] if f.column in read else frame[f.column]
                for f in ENTRY_FIELDS
            },
            EXTRA_COLUMN: pl.Series(columns.extras or [None] * count, dtype=pl.String),
            "position": pl.int_range(0, count, dtype=pl.Int32, eager=True),
        }
    )
    if reasons:
        keep = pl.repeat(True, count, dtype=pl.Boolean, eager=True).scatter(list(reasons), False)
        typed = typed.filter(keep)
    typed = typed.with_columns(
        [pl.col(f.column).str.to_decimal(scale=MAX_SCALE).cast(MONEY) for f in _MONEY]
    )
    return typed, reasons


def _text_frame(
    created: list[Any],
    strings: dict[str, list[Any]],
    money: dict[str, list[Any]],
    flags: list[Any],
) -> pl.DataFrame:
    money_texts = {f"{name}_text": values for name, values in money.items()}
    return pl.DataFrame(
        {
            "created_text": created,
            **strings,
            **money_texts,
            HAS_DESCRIPTION.column: flags,
        },
        schema={
            "created_text": pl.String(),
            **dict.fromkeys([*strings, *money_texts], pl.String()),
            HAS_DESCRIPTION.column: pl.Boolean(),
        },
    ).with_columns(
        pl.col("created_text")
        .str.strptime(TIMESTAMP, format="%+", strict=False)
        .alias(CREATED_AT.column),
        *(
            pl.col(f"{name}_text").str.contains(_PLAIN_PATTERN).alias(f"{name}_plain")
            for name in money
        ),
    )


def _encodable(value: str) -> bool:
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a number"  # a JSON number arrives as its exact text (JsonNumber)
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__
