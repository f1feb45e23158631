"""Exact chain arithmetic on integer micro-credits.

Money is Decimal(18,6) at the edges. Its physical value is an integer count of micro-credits, which
fits an Int64 (10**18 < 2**63). Comparing and subtracting Int64 columns is exact and much faster
than Decimal arithmetic, so the chain is computed in micro-credits and turned back into
Decimal(18,6) only for output.
"""

from __future__ import annotations

from decimal import Decimal

import polars as pl

MONEY = pl.Decimal(18, 6)
MICROS_PER_CREDIT = 1_000_000


def to_micros(expr: pl.Expr) -> pl.Expr:
    """Decimal (any scale that fits 18,6) to Int64 micro-credits, exactly."""
    return expr.cast(MONEY).to_physical().cast(pl.Int64)


def from_micros(expr: pl.Expr) -> pl.Expr:
    """Int64 micro-credits back to Decimal(18,6), exactly (a reinterpretation, no division)."""
    return expr.cast(pl.Int128).reinterpret(dtype=MONEY)


def decimal_to_micros(value: Decimal) -> int:
    """A Python Decimal to micro-credits; refuses values that need more than 6 decimals."""
    scaled = value * MICROS_PER_CREDIT
    if scaled != scaled.to_integral_value():
        raise ValueError(f"{value} has more than 6 decimal places")
    return int(scaled)


def micros_to_decimal(micros: int) -> Decimal:
    return Decimal(micros).scaleb(-6).quantize(Decimal("0.000001"))
