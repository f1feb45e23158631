"""The identity rule, written out independently: a fingerprint is a public interface (entry_id).

Analysts join on entry_id across syncs, so the digest may not change silently when the code
computing it is made faster; this test spells the documented rule out in plain Python.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from decimal import Decimal

import polars as pl

from transforms.identify import NULL, SEP, with_fingerprint
from transforms.wire import MONEY, TIMESTAMP


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
