"""Entry types (an open set) and sign conventions."""

from __future__ import annotations

from decimal import Decimal

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.transforms.ledger_strategies import generic_chains
from tests.transforms.ledgers import Chain, ledger_frame, money, seconds, shuffled, unsigned
from transforms.continuity import reconcile_continuity
from transforms.entry_type import EntryTypeRules, category_of, is_debit_direction, type_meanings
from transforms.normalize import (
    SignConvention,
    SignInference,
    choose_sign_convention,
    sign_pair_counts,
    with_signed_amount,
)


@pytest.mark.parametrize(
    ("name", "category", "debit"),
    [
        ("Usage", "debit", True),
        ("PlanGrant", "credit", False),
        ("TopUp", "credit", False),
        ("top-up", "credit", False),
        ("Refund", "refund", False),
        ("Adjustment", "adjustment", False),
        ("AdjustmentCredit", "adjustment", False),
        ("AdjustmentDebit", "adjustment", True),
        ("Expiry", "other", True),
        ("Promotion", "other", False),
        ("CreditPurchase", "credit", False),
        ("ConsumptionCharge", "debit", True),
        ("ServiceFee", "other", True),
        ("", "other", False),
        (None, "other", False),
    ],
)
def test_category_and_direction_follow_the_contract(
    name: str | None, category: str, debit: bool
) -> None:
    assert category_of(name) == category
    assert is_debit_direction(name) is debit


def test_debit_pattern_is_configurable() -> None:
    rules = EntryTypeRules(debit_pattern="usage|penalty")
    assert is_debit_direction("LatePenalty", rules)
    assert not is_debit_direction("Expiry", rules)


def test_type_meanings_runs_once_per_distinct_name() -> None:
    meanings = type_meanings(pl.Series(["Usage", "Usage", "Refund", None]))
    assert meanings.height == 3
    assert dict(zip(meanings["entry_type"], meanings["category"], strict=True)) == {
        "Usage": "debit",
        "Refund": "refund",
        None: "other",
    }


def test_unsigned_amounts_are_negated_for_debit_types_only() -> None:
    chain = Chain(
        money("-2", "5", "-1", "3"),
        seconds(0, 1, 2, 3),
        types=["Usage", "Refund", "AdjustmentDebit", "AdjustmentCredit"],
    )
    signed = with_signed_amount(unsigned(ledger_frame(chain)), "unsigned")
    assert signed["signed_amount"].to_list() == money("-2", "5", "-1", "3")
    as_is = with_signed_amount(ledger_frame(chain), "signed")
    assert as_is["signed_amount"].to_list() == money("-2", "5", "-1", "3")


def _infer(ledger: pl.DataFrame, default: SignConvention = "signed") -> SignInference:
    """Inference over a ledger read as one slice, as reconciliation decides it."""
    return choose_sign_convention(sign_pair_counts(ledger), default)


def test_inference_ties_go_to_the_default() -> None:
    credits_only = ledger_frame(Chain(money("5", "6"), seconds(0, 1)))
    assert _infer(credits_only).convention == "signed"
    assert _infer(credits_only, default="unsigned").convention == "unsigned"
    empty = _infer(ledger_frame())
    assert empty.pairs_explained == {"signed": 0, "unsigned": 0}


@settings(max_examples=40, deadline=None)
@given(chain=generic_chains(min_entries=2), seed=st.integers(0, 2**16))
def test_inference_picks_the_convention_the_balances_follow(chain: Chain, seed: int) -> None:
    frame = shuffled(ledger_frame(chain), seed)
    # The first entry has no predecessor, so only a later debit can tell the conventions apart.
    has_debit = any(a < 0 for a in chain.amounts[1:])
    signed = _infer(frame)
    from_unsigned = _infer(unsigned(frame))
    assert signed.convention == "signed"
    assert from_unsigned.convention == ("unsigned" if has_debit else "signed")
    if has_debit:
        assert signed.pairs_explained["signed"] > signed.pairs_explained["unsigned"]
        # What reconciliation does with "infer": decide, then reconcile under the decision.
        inference = _infer(unsigned(frame))
        inferred = reconcile_continuity(unsigned(frame), convention=inference.convention)
        assert inferred.convention == "unsigned"
        assert inference == from_unsigned
        assert inferred.breaks.height == 0
        assert inferred.ordered["signed_amount"].sum() == sum(chain.amounts, Decimal(0))
