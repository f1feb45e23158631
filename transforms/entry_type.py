"""What an entry type means: its category and, under the unsigned convention, its direction.

Entry types are an open set (the API does not list them), so the meaning comes from the type name,
never from a closed list. This module is the one place where that rule lives (docs/contracts.md,
"Entry types"): everything else asks it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import polars as pl

Category = Literal["debit", "credit", "refund", "adjustment", "other"]

CATEGORIES: tuple[Category, ...] = ("debit", "credit", "refund", "adjustment", "other")
DEFAULT_DEBIT_TYPE_PATTERN = "debit|usage|charge|consum|expir|fee"


@dataclass(frozen=True)
class EntryTypeRules:
    """Patterns matched (regex search) against the type name reduced to lowercase alphanumerics.

    The category patterns are tried in order (refund, adjustment, debit, credit); the first that
    matches wins, which is why `AdjustmentCredit` is an adjustment and `RefundDebit` a refund.
    `debit_pattern` is `CREDITLENS_DEBIT_TYPE_PATTERN`: it only decides the sign of unsigned
    amounts, so `Expiry` is a debit in direction while its category is `other`.
    """

    refund_pattern: str = "refund"
    adjustment_pattern: str = "adjust"
    debit_category_pattern: str = "usage|debit|charge|consum"
    credit_category_pattern: str = "grant|topup|purchase|credit"
    debit_pattern: str = DEFAULT_DEBIT_TYPE_PATTERN


DEFAULT_RULES = EntryTypeRules()


def normalized_type_name(type_name: str | None) -> str:
    """`Top-Up` and `top_up` must mean the same, so names compare as lowercase alphanumerics."""
    return re.sub(r"[^a-z0-9]", "", (type_name or "").lower())


def category_of(type_name: str | None, rules: EntryTypeRules = DEFAULT_RULES) -> Category:
    name = normalized_type_name(type_name)
    ordered: tuple[tuple[str, Category], ...] = (
        (rules.refund_pattern, "refund"),
        (rules.adjustment_pattern, "adjustment"),
        (rules.debit_category_pattern, "debit"),
        (rules.credit_category_pattern, "credit"),
    )
    for pattern, category in ordered:
        if re.search(pattern, name):
            return category
    return "other"


def is_debit_direction(type_name: str | None, rules: EntryTypeRules = DEFAULT_RULES) -> bool:
    """Direction under the unsigned convention: True when the amount lowers the balance."""
    return re.search(rules.debit_pattern, normalized_type_name(type_name)) is not None


def type_meanings(types: pl.Series, rules: EntryTypeRules = DEFAULT_RULES) -> pl.DataFrame:
    """Category and direction of each distinct type name.

    Ledgers repeat a handful of names millions of times, so the rule runs once per distinct name
    and callers join the result back (`entry_type`, `category`, `is_debit_direction`).
    """
    names = types.unique().to_list()
    return pl.DataFrame(
        {
            "entry_type": names,
            "category": [category_of(n, rules) for n in names],
            "is_debit_direction": [is_debit_direction(n, rules) for n in names],
        },
        schema={"entry_type": pl.Utf8, "category": pl.Utf8, "is_debit_direction": pl.Boolean},
    )
