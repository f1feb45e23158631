"""From wire entries to typed ledger rows, column by column, with a reason for every reject.

This is the one definition of what a valid ledger entry is. The page parser keeps JSON numbers as
their exact text, so money is validated here as text and becomes DECIMAL(18,6) without ever being
a float. An entry that breaks a rule is not dropped: it comes back as a reject with the reason,
and the pipeline quarantines it.

Rules (documented in README's data dictionary):
- the entry is a JSON object;
- ``createdAt`` is an ISO 8601 date-time (no offset is read as UTC) inside the requested window;
- ``type`` is a non-empty string;
- ``amount`` and ``balanceAfter`` are finite JSON numbers (or numeric strings) that fit
  DECIMAL(18,6) exactly: at most 12 integer digits and 6 decimal places, nothing rounded;
- ``description``, ``channel``, ``agentId``, ``campaignId`` are strings or null/absent;
  ``hasDescription`` is a boolean or null/absent;
- any other field is kept, as JSON text in ``extra``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import polars as pl

from transforms.json_text import dumps_exact

MONEY = pl.Decimal(18, 6)
TIMESTAMP = pl.Datetime("us", "UTC")
MAX_INTEGER_DIGITS = 12
MAX_SCALE = 6

STRING_FIELDS = {
    "type": "entry_type",
    "description": "description",
    "channel": "channel",
    "agentId": "agent_id",
    "campaignId": "campaign_id",
}
MONEY_FIELDS = {"amount": "amount", "balanceAfter": "balance_after"}
KNOWN_FIELDS = {"createdAt", "hasDescription", *STRING_FIELDS, *MONEY_FIELDS}

ENTRY_SCHEMA: dict[str, pl.DataType] = {
    "created_at": TIMESTAMP,
    "entry_type": pl.String(),
    "amount": MONEY,
    "description": pl.String(),
    "has_description": pl.Boolean(),
    "channel": pl.String(),
    "agent_id": pl.String(),
    "campaign_id": pl.String(),
    "balance_after": MONEY,
    "extra": pl.String(),
    "position": pl.Int32(),
}

_QUANTUM = Decimal(1).scaleb(-MAX_SCALE)
_PLAIN_MONEY = re.compile(rf"-?\d{{1,{MAX_INTEGER_DIGITS}}}(?:\.\d{{1,{MAX_SCALE}}}0*)?")


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
    if _PLAIN_MONEY.fullmatch(text):
        return text
    try:
        value = Decimal(text.strip())
    except (InvalidOperation, ValueError):
        return None
    if not value.is_finite() or abs(value) >= Decimal(10) ** MAX_INTEGER_DIGITS:
        return None
    exponent = value.normalize().as_tuple().exponent
    if not isinstance(exponent, int) or exponent < -MAX_SCALE:
        return None
    return f"{value.quantize(_QUANTUM):f}"


def _money_reason(field: str, value: Any) -> str:
    if value is None:
        return f"{field} is missing"
    if not isinstance(value, str):
        return f"{field} is {type(value).__name__}, expected a number"
    text = str(value)
    shown = text if len(text) <= 40 else text[:37] + "..."
    return (
        f"{field} {shown!r} is not a finite number that fits DECIMAL(18,6) exactly "
        f"(at most {MAX_INTEGER_DIGITS} integer digits and {MAX_SCALE} decimal places)"
    )


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


def entries_frame(
    rows: list[Any], first_day: date | None = None, last_day: date | None = None
) -> tuple[pl.DataFrame, list[Reject]]:
    """Typed rows (``ENTRY_SCHEMA``) and rejects; ``len(frame) + len(rejects) == len(rows)``."""
    reasons: dict[int, str] = {}
    objects = [row if isinstance(row, dict) else None for row in rows]
    for i, row in enumerate(objects):
        if row is None:
            reasons[i] = f"entry is {type(rows[i]).__name__}, expected an object"
    empty: dict[str, Any] = {}
    get = [row if row is not None else empty for row in objects]

    created: list[datetime | None] = []
    for i, row in enumerate(get):
        moment = parse_created_at(row.get("createdAt"))
        created.append(moment)
        if moment is None and i not in reasons:
            raw = row.get("createdAt")
            reasons[i] = (
                "createdAt is missing" if raw is None else f"createdAt {raw!r} is not a date-time"
            )
        elif moment is not None and first_day is not None and last_day is not None:
            day = moment.date()
            if not first_day <= day <= last_day and i not in reasons:
                reasons[i] = (
                    f"createdAt {row.get('createdAt')} is outside the requested window "
                    f"{first_day.isoformat()}..{last_day.isoformat()}"
                )

    columns: dict[str, list[Any]] = {}
    for wire, name in STRING_FIELDS.items():
        values = [row.get(wire) for row in get]
        for i, v in enumerate(values):
            if v is not None and type(v) is not str and i not in reasons:
                reasons[i] = f"{wire} is {_json_type(v)}, expected a string"
        columns[name] = values
    for i, v in enumerate(columns["entry_type"]):
        if (v is None or not v.strip()) and i not in reasons:
            reasons[i] = "type is missing or empty"

    flags = [row.get("hasDescription") for row in get]
    for i, v in enumerate(flags):
        if v is not None and type(v) is not bool and i not in reasons:
            reasons[i] = f"hasDescription is {_json_type(v)}, expected a boolean"

    for wire, name in MONEY_FIELDS.items():
        values = [row.get(wire) for row in get]
        texts = [exact_money(v) for v in values]
        for i, t in enumerate(texts):
            if t is None and i not in reasons:
                reasons[i] = _money_reason(wire, values[i])
        columns[name] = texts

    extras = [
        dumps_exact({k: v for k, v in row.items() if k not in KNOWN_FIELDS})
        if len(row) > len(KNOWN_FIELDS & row.keys())
        else None
        for row in get
    ]

    keep = [i for i in range(len(rows)) if i not in reasons]
    pick = (lambda values: [values[i] for i in keep]) if reasons else (lambda values: values)
    frame = pl.DataFrame(
        {
            "created_at": pick(created),
            "entry_type": pick(columns["entry_type"]),
            "amount": pick(columns["amount"]),
            "description": pick(columns["description"]),
            "has_description": pick(flags),
            "channel": pick(columns["channel"]),
            "agent_id": pick(columns["agent_id"]),
            "campaign_id": pick(columns["campaign_id"]),
            "balance_after": pick(columns["balance_after"]),
            "extra": pick(extras),
            "position": keep if reasons else list(range(len(rows))),
        },
        schema={**ENTRY_SCHEMA, "amount": pl.String(), "balance_after": pl.String()},
    ).with_columns(
        pl.col("amount").str.to_decimal(scale=MAX_SCALE).cast(MONEY),
        pl.col("balance_after").str.to_decimal(scale=MAX_SCALE).cast(MONEY),
    )
    rejects = [Reject(i, reason, rows[i]) for i, reason in sorted(reasons.items())]
    return frame, rejects


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
