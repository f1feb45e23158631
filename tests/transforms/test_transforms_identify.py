"""The identity rule, written out independently: a fingerprint is a public interface (entry_id).

Analysts join on entry_id across syncs, so the digest may not change silently when the code
computing it is made faster; this test spells the documented rule out in plain Python.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime
from decimal import Decimal

import polars as pl

from pipelines.api.ledger_entry import ENTRY_FIELDS
from pipelines.api.wire import MONEY, TIMESTAMP
from tests.transforms.duck import query
from transforms.identify import CANONICAL_FIELDS, NULL, SEP, identified_sql, with_fingerprint


def _documented(row: dict[str, object]) -> str:
    created = row["created_at"]
    assert isinstance(created, datetime)
    micros = int(created.timestamp()) * 1_000_000 + created.microsecond
    parts: list[object] = [
        row["account"],
        micros,
        row["entry_type"],
        row["amount"],
        row["description"],
        {True: "true", False: "false", None: None}[row["has_description"]],  # type: ignore[index]
        row["channel"],
        row["agent_id"],
        row["campaign_id"],
        row["balance_after"],
    ]
    text = SEP.join(NULL if p is None else str(p) for p in parts)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def test_fingerprint_is_blake2b_128_of_the_canonical_text() -> None:
    rows = [
        {
            "account": "acme",
            "created_at": datetime(2025, 3, 1, 12, 30, 0, 123456, tzinfo=UTC),
            "entry_type": "Usage",
            "amount": Decimal("-1.250000"),
            "description": "Appel sortant — café ☕",
            "has_description": True,
            "channel": "phone",
            "agent_id": "agent-1",
            "campaign_id": "camp-1",
            "balance_after": Decimal("98.750000"),
        },
        {
            "account": "acme",
            "created_at": datetime(2025, 3, 1, 0, 0, tzinfo=UTC),
            "entry_type": "Credit",
            "amount": Decimal("100.000000"),
            "description": None,
            "has_description": None,
            "channel": None,
            "agent_id": None,
            "campaign_id": None,
            "balance_after": Decimal("100.000000"),
        },
    ]
    frame = pl.DataFrame(
        rows,
        schema={
            "account": pl.String,
            "created_at": TIMESTAMP,
            "entry_type": pl.String,
            "amount": MONEY,
            "description": pl.String,
            "has_description": pl.Boolean,
            "channel": pl.String,
            "agent_id": pl.String,
            "campaign_id": pl.String,
            "balance_after": MONEY,
        },
    )
    fingerprinted = with_fingerprint(frame)
    assert fingerprinted["fingerprint"].to_list() == [_documented(r) for r in rows]
    assert fingerprinted["entry_day"].to_list() == [r["created_at"].date() for r in rows]  # type: ignore[union-attr]


def test_the_rule_covers_every_declared_entry_field() -> None:
    """A field the API gains is a decision about identities, not a silent change to them."""
    assert ("account", *(f.column for f in ENTRY_FIELDS)) == CANONICAL_FIELDS


def test_identical_entries_of_a_day_are_numbered_in_reading_order() -> None:
    day, other_day = date(2025, 3, 1), date(2025, 3, 2)
    staged = pl.DataFrame(
        {
            "account": ["acme", "acme", "acme", "acme", "other"],
            "entry_day": [day, day, day, other_day, day],
            "fingerprint": ["f", "f", "g", "f", "f"],
            "window_start": [day, day, day, day, day],
            "page_number": [2, 1, 1, 1, 1],
            "page_position": [0, 5, 0, 0, 0],
        }
    )
    rows = query(
        identified_sql("staged") + " ORDER BY account, entry_day, page_number, page_position",
        staged=staged,
    )
    assert [(r["account"], r["entry_day"], r["entry_id"], r["occurrence"]) for r in rows] == [
        ("acme", day, "g-1", 1),
        ("acme", day, "f-1", 1),
        ("acme", day, "f-2", 2),
        ("acme", other_day, "f-1", 1),
        ("other", day, "f-1", 1),
    ]
