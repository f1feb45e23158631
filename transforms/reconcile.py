"""One entry point for reconciling a landed ledger: sign convention, then continuity.

The rules live in their own modules (`normalize`, `tie_order`, `continuity`, `cross_checks`);
this module only chooses the sign convention (given or inferred) and hands over.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Literal

import polars as pl

from transforms.continuity import Reconciliation, reconcile_continuity
from transforms.cross_checks import (
    BreakdownFields,
    CheckOutcome,
    breakdown_check,
    summary_check,
)
from transforms.entry_type import DEFAULT_RULES, EntryTypeRules
from transforms.normalize import SignConvention, infer_sign_convention

__all__ = [
    "BreakdownFields",
    "CheckOutcome",
    "Reconciliation",
    "breakdown_check",
    "reconcile",
    "reconcile_continuity",
    "summary_check",
]


def reconcile(
    ledger: pl.DataFrame,
    *,
    convention: SignConvention | Literal["infer"] = "signed",
    tolerance: Decimal = Decimal(0),
    rules: EntryTypeRules = DEFAULT_RULES,
    default_convention: SignConvention = "signed",
) -> Reconciliation:
    """Continuity of `ledger` under `convention`; with 'infer', the convention the balances prefer.

    The inference (and its pair counts) is kept on the result so reports can say why.
    """
    if convention != "infer":
        return reconcile_continuity(ledger, convention=convention, tolerance=tolerance, rules=rules)
    inference = infer_sign_convention(ledger, rules, default_convention)
    result = reconcile_continuity(
        ledger, convention=inference.convention, tolerance=tolerance, rules=rules
    )
    return dataclasses.replace(result, inference=inference)
