"""The one grammar of money on the wire, and whether a value fits DECIMAL(18,6) exactly.

Ledger entries and billing snapshots both carry money, and a platform that writes it loosely
must not get a value past one of them that the other would refuse. So both read money here.

The grammar is JSON's number grammar, with ASCII digits only: ``-?(0|[1-9][0-9]*)(.[0-9]+)?
([eE][+-]?[0-9]+)?``. A JSON string holding a JSON text that is such a number (``"12.5"``, or
``" 12.5 "``: JSON allows its own whitespace around a value) is the one documented string form.
Nothing looser is money: not ``+5``, ``1_000``, ``0x10``, ``NaN``, ``1.``, and not digits of other
scripts (Arabic-Indic, full-width), which ``Decimal`` and ``\\d`` accept.

Whether a value fits is decided from its digits and exponent, never through a decimal context:
a context rounds (``1e-999999999999`` would become 0) or traps on an absurd exponent, and a
value that does not fit must be refused with its reason, never rounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from pipelines.api.ledger_entry import MONEY_PRECISION, MONEY_SCALE

# DECIMAL(18,6) holds 12 integer digits. A ledger entry keeps one in reserve, so that the balance
# before it (balanceAfter - amount) still fits; a snapshot's money derives nothing and uses all.
SNAPSHOT_INTEGER_DIGITS = MONEY_PRECISION - MONEY_SCALE
ENTRY_INTEGER_DIGITS = SNAPSHOT_INTEGER_DIGITS - 1
MAX_SCALE = MONEY_SCALE

_NUMBER = re.compile(r"(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?")
# An exponent this long puts any non-zero value far outside DECIMAL(18,6); reading it as an int
# would only cost time (or hit Python's limit on long integer strings).
_LONGEST_EXPONENT = 6
_QUANTUM = Decimal(1).scaleb(-MAX_SCALE)
_JSON_WHITESPACE = " \t\n\r"


def plain_pattern(integer_digits: int) -> str:
    """The common case as a regex a vectorized pass can run (polars' regex is Rust's, whose
    ``\\d`` is Unicode too, so digits are spelled ``[0-9]``): a plain decimal that fits."""
    return rf"^-?(?:0|[1-9][0-9]{{0,{integer_digits - 1}}})(?:\.[0-9]{{1,{MAX_SCALE}}}0*)?$"


@dataclass(frozen=True)
class MoneyProblem:
    """Why a text is not money that fits, in words a reject or a warning can carry."""

    reason: str
    out_of_range: bool = True  # False: not money at all (the grammar), whatever its size


def read_money(text: str, integer_digits: int) -> Decimal | MoneyProblem:
    """The exact value of ``text`` when it is money in the wire grammar that DECIMAL(18,6)
    holds with at most ``integer_digits`` integer digits, else why not."""
    match = _NUMBER.fullmatch(text.strip(_JSON_WHITESPACE))
    if match is None:
        return MoneyProblem(
            "is not a number in JSON's grammar (ASCII digits; no sign but '-', no separators, "
            "hex, NaN or Infinity)",
            out_of_range=False,
        )
    sign, whole, fraction, exponent_text = match.groups(default="")
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return Decimal(f"{sign}0").quantize(_QUANTUM)
    significant = digits.rstrip("0")
    exponent_digits = exponent_text.lstrip("+-").lstrip("0")
    if len(exponent_digits) > _LONGEST_EXPONENT:
        negative = exponent_text.startswith("-")
        return _too_fine() if negative else _too_large(integer_digits)
    # value = significant * 10**last: the exponent of its last significant digit.
    last = int(exponent_text or "0") - len(fraction) + len(digits) - len(significant)
    if -last > MAX_SCALE:
        return _too_fine()
    if len(significant) + last > integer_digits:
        return _too_large(integer_digits)
    return Decimal(f"{sign}{significant}E{last}").quantize(_QUANTUM)


def _too_fine() -> MoneyProblem:
    return MoneyProblem(f"is finer than a micro-credit (more than {MAX_SCALE} decimal places)")


def _too_large(integer_digits: int) -> MoneyProblem:
    return MoneyProblem(f"has more than {integer_digits} integer digits")


def money_text(value: Decimal) -> str:
    """The plain text of a value ``read_money`` returned, as the vectorized pass writes it."""
    return f"{value:f}"
