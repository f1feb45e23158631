"""Hand-built ledgers for the transform tests, in the landed `ledger_entries` shape.

A ledger is described by its true chain (amounts in order, createdAt offsets) and the hidden
movements injected before chosen entries; the frame then says what the API would have said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import polars as pl

LEDGER_SCHEMA: dict[str, pl.DataType] = {
    "account": pl.Utf8(),
    "entry_id": pl.Utf8(),
    "created_at": pl.Datetime("us", "UTC"),
    "entry_type": pl.Utf8(),
    "amount": pl.Decimal(18, 6),
    "description": pl.Utf8(),
    "has_description": pl.Boolean(),
    "channel": pl.Utf8(),
    "agent_id": pl.Utf8(),
    "campaign_id": pl.Utf8(),
    "balance_after": pl.Decimal(18, 6),
}
T0 = datetime(2025, 1, 1, tzinfo=UTC)
MICRO = Decimal("0.000001")


@dataclass
class Chain:
    """The true history of one account: amounts in chain order and when they happened."""

    amounts: Sequence[Decimal]
    offsets: Sequence[timedelta]
    opening: Decimal = Decimal("1000")
    account: str = "acme"
    gaps: dict[int, Decimal] = field(default_factory=dict)
    types: Sequence[str] | None = None
    dimensions: Sequence[tuple[str | None, str | None, str | None]] | None = None

    def rows(self) -> list[dict[str, object]]:
        balance = self.opening
        rows = []
        for i, (amount, offset) in enumerate(zip(self.amounts, self.offsets, strict=True)):
            balance += self.gaps.get(i, Decimal(0)) + amount
            entry_type = self.types[i] if self.types else ("Usage" if amount < 0 else "TopUp")
            agent, campaign, channel = (
                self.dimensions[i] if self.dimensions else _default_dimensions(entry_type)
            )
            rows.append(
                {
                    "account": self.account,
                    "entry_id": f"{self.account}-{i:05d}",
                    "created_at": T0 + offset,
                    "entry_type": entry_type,
                    "amount": amount,
                    "description": None,
                    "has_description": False,
                    "channel": channel,
                    "agent_id": agent,
                    "campaign_id": campaign,
                    "balance_after": balance,
                }
            )
        return rows

    def true_pair(self, i: int) -> tuple[Decimal, Decimal]:
        """(expected, observed) of the hidden movement injected before entry i."""
        balance = self.opening
        for j in range(i):
            balance += self.gaps.get(j, Decimal(0)) + self.amounts[j]
        return balance, balance + self.gaps[i]


def _default_dimensions(entry_type: str) -> tuple[str | None, str | None, str | None]:
    if entry_type in ("Usage", "Refund"):
        return "agt_1", "cmp_1", "Phone"
    return None, None, None


def ledger_frame(*chains: Chain) -> pl.DataFrame:
    rows = [row for chain in chains for row in chain.rows()]
    return pl.DataFrame(rows, schema=LEDGER_SCHEMA, orient="row") if rows else empty_ledger()


def empty_ledger() -> pl.DataFrame:
    return pl.DataFrame(schema=LEDGER_SCHEMA)


def unsigned(frame: pl.DataFrame) -> pl.DataFrame:
    """The same ledger as an API with the unsigned convention would send it."""
    return frame.with_columns(pl.col("amount").abs())


def shuffled(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    return frame.sample(fraction=1.0, shuffle=True, seed=seed)


def seconds(*values: float) -> list[timedelta]:
    return [timedelta(seconds=v) for v in values]


def money(*values: str | int) -> list[Decimal]:
    return [Decimal(v) for v in values]


def usage_chain(account: str = "acme") -> Chain:
    """Three usages, a refund and a top-up over two days: 100 opening, 141.5 closing."""
    return Chain(
        amounts=money("-2.5", "-3", "1", "-4", "50"),
        offsets=seconds(0, 60, 120, 86400, 86400),
        opening=Decimal(100),
        account=account,
        types=["Usage", "Usage", "Refund", "Usage", "TopUp"],
        dimensions=[
            ("agt_a", "cmp_x", "Phone"),
            ("agt_b", "cmp_x", "Chat"),
            ("agt_b", "cmp_x", "Chat"),
            ("agt_a", "cmp_x", "Phone"),
            (None, None, None),
        ],
    )
