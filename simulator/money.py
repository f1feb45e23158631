"""Exact money for the simulator: integers of 1/10000 credit.

Amounts have at most 4 decimal places, so integer units make every balance sum exact and fast
(1M entries are generated in seconds), while the wire and the ground truth see Decimals.
"""

from __future__ import annotations

from decimal import Decimal

SCALE = 10_000
_QUANT = Decimal(1).scaleb(-4)


def units_to_text(units: int) -> str:
    """JSON number text with no float noise and no trailing zeros: -12500 -> "-1.25"."""
    sign = "-" if units < 0 else ""
    whole, frac = divmod(abs(units), SCALE)
    if frac == 0:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{frac:04d}".rstrip("0")


def units_to_decimal(units: int) -> Decimal:
    return Decimal(units_to_text(units))


def decimal_to_units(value: Decimal | int | str) -> int:
    """Refuses more than 4 decimal places rather than rounding money silently."""
    d = Decimal(value)
    q = d.quantize(_QUANT)
    if q != d:
        raise ValueError(f"amount {value} has more than 4 decimal places")
    return int(q.scaleb(4))


def decimal_text(value: Decimal) -> str:
    """Plain (never exponent) text of a Decimal, trailing zeros dropped."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text
