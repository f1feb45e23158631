"""Money as text: one precision on screen, every digit where a reader can ask for it.

The site's precision rule, the same on every page: an amount is shown rounded to 0.01 (half away
from zero, as a spreadsheet displays it), and its exact value is one hover away (the cell's
tooltip, a chart's hover box) and in the CSV beside every table. Rounding each amount on its own
can leave a statement's rounded lines 0.01 away from its rounded closing; statements then show
that difference on a line of its own (``rounding_difference``), so what is on screen adds up to
the cent and the exact figures add up exactly. Nothing here goes through float.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal

_CENTS = Decimal("0.01")
PRECISION_NOTE = (
    "Amounts in credits, rounded to 0.01 on screen (hover an amount for its exact value); "
    "CSV files hold the exact values."
)


def rounded(value: Decimal) -> Decimal:
    """The amount as the screen shows it: to the cent, half away from zero."""
    return value.quantize(_CENTS, ROUND_HALF_UP)


def money_text(value: Decimal | None) -> str:
    """An amount for the screen: thousands separators and exactly two decimals.

    ``Decimal("37828.2485")`` reads ``37,828.25``; ``Decimal("-0.004")`` reads ``0.00`` (no
    negative zero). The exact value is ``exact_money_text``'s.
    """
    if value is None:
        return "—"
    shown = rounded(value)
    return f"{shown if shown else abs(shown):,f}"


def signed_money_text(value: Decimal | None) -> str:
    """A change, with its sign shown even when positive (at the screen's precision)."""
    if value is None:
        return "—"
    text = money_text(value)
    shown = rounded(value)
    return text if shown < 0 else f"+{text}" if shown > 0 else text


def exact_money_text(value: Decimal | None) -> str:
    """Every significant digit, with separators and at least two decimals: for tooltips and
    hover boxes, where a reader asks for the exact figure.

    ``Decimal("1234.500000")`` reads ``1,234.50``; ``Decimal("0.000125")`` reads ``0.000125``.
    """
    if value is None:
        return "—"
    exact = value.normalize() if value else Decimal(0)
    exponent = exact.as_tuple().exponent
    if not isinstance(exponent, int) or exponent > -2:
        exact = exact.quantize(_CENTS)
    return f"{exact:,f}"


def is_rounded(value: Decimal | None) -> bool:
    """Whether the screen's figure differs from the exact one (then a tooltip says it)."""
    return value is not None and rounded(value) != value


def decimal_text(value: Decimal | None) -> str:
    """Plain exact text for CSV files and sort keys: ``-1234.500000``, no grouping."""
    return "" if value is None else f"{value + 0:f}"  # + 0 turns -0 into 0


def rounding_difference(parts: Sequence[Decimal]) -> Decimal:
    """What showing each of ``parts`` rounded leaves between their rounded sum and the sum of
    their rounded figures: the line that makes a statement add up on screen (zero more often
    than not). Only rounding: a statement whose exact lines do not reach its closing still shows
    that it does not."""
    return rounded(sum(parts, Decimal(0))) - sum((rounded(p) for p in parts), Decimal(0))


# A figure with more than two decimals inside a sentence, not a time's fractional seconds
# (``00:05:00.086000Z``) nor part of an id.
_FIGURE = re.compile(r"(?<![\w.:])-?\d+\.\d{3,}(?![\w.])")


def figures_rounded(text: str) -> str:
    """A sentence the pipeline stored (a check's message quotes exact balances) with each
    figure at the screen's precision; the sentence itself is kept verbatim for a tooltip."""
    return _FIGURE.sub(lambda m: money_text(Decimal(m.group(0))).replace(",", ""), text)


def percent_text(part: Decimal, whole: Decimal) -> str:
    """A share computed in Decimal, one decimal place; a dash when the whole is zero."""
    if not whole:
        return "—"
    return f"{(part * 100 / whole).quantize(Decimal('0.1'))}%"


def percent_value(part: Decimal, whole: Decimal) -> Decimal | None:
    return None if not whole else (part * 100 / whole).quantize(Decimal("0.1"))
