"""Signed amounts: one sign convention for the rest of the pipeline.

The API does not say whether debits come negative (`signed`) or as magnitudes whose direction is
in the type name (`unsigned`). Everything downstream works on `signed_amount`, where a debit is
negative whatever the wire said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import polars as pl

from transforms.entry_type import DEFAULT_RULES, EntryTypeRules, type_meanings
from transforms.micros import MONEY, to_micros

SignConvention = Literal["signed", "unsigned"]
SIGN_CONVENTIONS: tuple[SignConvention, ...] = ("signed", "unsigned")


def signed_amount_expr(
    convention: SignConvention, is_debit_direction: pl.Expr | None = None
) -> pl.Expr:
    """`amount` as a signed Decimal(18,6); `unsigned` needs the row's debit direction."""
    amount = pl.col("amount").cast(MONEY)
    if convention == "signed":
        return amount
    if convention == "unsigned":
        if is_debit_direction is None:
            raise ValueError("the unsigned convention needs the debit direction of each row")
        return pl.when(is_debit_direction).then(-amount).otherwise(amount).cast(MONEY)
    raise ValueError(f"unknown sign convention {convention!r}; expected signed or unsigned")


def with_signed_amount(
    ledger: pl.DataFrame,
    convention: SignConvention = "signed",
    rules: EntryTypeRules = DEFAULT_RULES,
) -> pl.DataFrame:
    """Adds (or replaces) `signed_amount` Decimal(18,6), keeping row order and columns."""
    if convention == "signed":
        return ledger.with_columns(signed_amount=signed_amount_expr("signed"))
    meanings = type_meanings(ledger["entry_type"], rules).select(
        "entry_type", pl.col("is_debit_direction").alias("__debit")
    )
    return (
        ledger.join(meanings, on="entry_type", how="left", nulls_equal=True, maintain_order="left")
        .with_columns(signed_amount=signed_amount_expr(convention, pl.col("__debit")))
        .drop("__debit")
    )


@dataclass(frozen=True)
class SignInference:
    """The convention chosen and, for each convention, how many entries it chains to a predecessor.

    `pairs_explained[c]` counts entries whose balance_before under `c` equals the balance_after of
    an entry at the previous timestamp or the same timestamp of the same account, so the count does
    not depend on the order of entries that share a createdAt.
    """

    convention: SignConvention
    pairs_explained: dict[str, int] = field(default_factory=dict)


def choose_sign_convention(
    counts: dict[str, int], default: SignConvention = "signed"
) -> SignInference:
    """The convention that explains the most consecutive pairs; a tie goes to `default`.

    Counts summed over the slices of a ledger (`sign_pair_counts`) decide as the whole would. A
    tie happens when no debit-direction entry can tell them apart (only credits, or an empty
    ledger): then both conventions produce the same signed amounts anyway.
    """
    best = max(counts.values())
    winners = [c for c in SIGN_CONVENTIONS if counts[c] == best]
    chosen: SignConvention = default if default in winners else winners[0]
    return SignInference(chosen, dict(counts))


def sign_pair_counts(
    ledger: pl.DataFrame,
    rules: EntryTypeRules = DEFAULT_RULES,
    preceding: pl.DataFrame | None = None,
) -> dict[str, int]:
    """Per convention, how many entries of `ledger` it chains to a predecessor.

    `preceding` (account, created_at, balance_after) are the entries at the timestamp just before
    `ledger`'s first one when `ledger` is a slice of whole days of a longer ledger: they may be
    the predecessors of the slice's first entries, so counts summed over consecutive slices equal
    the counts over the whole ledger. They are only looked up, never counted.
    """
    if ledger.height == 0:
        return {c: 0 for c in SIGN_CONVENTIONS}
    meanings = type_meanings(ledger["entry_type"], rules).select("entry_type", "is_debit_direction")
    rows = ledger.select(
        "account", "created_at", "entry_type", "amount", "balance_after", __own=pl.lit(True)
    )
    if preceding is not None and preceding.height:
        context = preceding.select(
            "account",
            "created_at",
            entry_type=pl.lit(None, dtype=pl.Utf8),
            amount=pl.lit(None, dtype=MONEY),
            balance_after="balance_after",
            __own=pl.lit(False),
        )
        rows = pl.concat([context, rows], how="vertical_relaxed")
    base = rows.join(meanings, on="entry_type", how="left", nulls_equal=True).with_columns(
        group=pl.col("created_at").rank("dense").over("account"),
        after=to_micros(pl.col("balance_after")),
        signed=to_micros(signed_amount_expr("signed")),
        unsigned=to_micros(signed_amount_expr("unsigned", pl.col("is_debit_direction"))),
    )
    # Each balance_after may be the predecessor of an entry at its own timestamp or the next one.
    available = pl.concat(
        [
            base.select("account", "group", balance="after"),
            base.select("account", group=pl.col("group") + 1, balance="after"),
        ]
    ).unique()
    own = base.filter(pl.col("__own"))
    counts: dict[str, int] = {}
    for convention in SIGN_CONVENTIONS:
        candidates = own.select("account", "group", balance=pl.col("after") - pl.col(convention))
        counts[convention] = candidates.join(
            available, on=["account", "group", "balance"], how="semi"
        ).height
    return counts
