"""Money as text: exact, from the Decimal, never through float.

Tables and CSV files are read by finance, so a figure shown as text must be the warehouse's figure
digit for digit. Charts get floats (a chart is a picture); everything a reader can copy is text.
"""

from __future__ import annotations

from decimal import Decimal

_CENTS = Decimal("0.01")


def money_text(value: Decimal | None) -> str:
    """Thousands separators and at least two decimals, with every significant digit kept.

    ``Decimal("1234.500000")`` reads ``1,234.50``; ``Decimal("0.000125")`` reads ``0.000125``:
    trailing zeros go, digits never do.
    """
    if value is None:
        return "—"
    exact = value.normalize() if value else Decimal(0)
    exponent = exact.as_tuple().exponent
    if not isinstance(exponent, int) or exponent > -2:
        exact = exact.quantize(_CENTS)
    return f"{exact:,f}"


def signed_money_text(value: Decimal | None) -> str:
    """A change, with its sign shown even when positive."""
    if value is None:
        return "—"
    text = money_text(value)
    return text if value < 0 else f"+{text}" if value > 0 else text


def decimal_text(value: Decimal | None) -> str:
    """Plain exact text for CSV files and sort keys: ``-1234.500000``, no grouping."""
    return "" if value is None else f"{value + 0:f}"  # + 0 turns -0 into 0


def percent_text(part: Decimal, whole: Decimal) -> str:
    """A share computed in Decimal, one decimal place; a dash when the whole is zero."""
    if not whole:
        return "—"
    return f"{(part * 100 / whole).quantize(Decimal('0.1'))}%"


def percent_value(part: Decimal, whole: Decimal) -> Decimal | None:
    return None if not whole else (part * 100 / whole).quantize(Decimal("0.1"))
