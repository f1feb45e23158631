"""The sign convention of an account's ledger, inferred over its slices before reconciling.

Inference compares how many consecutive pairs each convention explains over the whole ledger,
so it is a pass of its own: pair counts per slice, summed, then one decision. A slice's first
entries may chain to the entries at the last createdAt of the slice before, which are handed on.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipelines.reconciliation.slices import LedgerSlice, Reader, read_slice
from transforms.entry_type import EntryTypeRules
from transforms.normalize import (
    SIGN_CONVENTIONS,
    SignConvention,
    SignInference,
    choose_sign_convention,
    sign_pair_counts,
)

INFERENCE_COLUMNS = "account, created_at, entry_type, amount, balance_after"


def infer_convention(
    source: Reader,
    account: str,
    slices: Sequence[LedgerSlice],
    rules: EntryTypeRules,
    default: SignConvention = "signed",
) -> SignInference:
    counts = dict.fromkeys(SIGN_CONVENTIONS, 0)
    preceding: pl.DataFrame | None = None
    for piece in slices:
        ledger = read_slice(source, account, piece, INFERENCE_COLUMNS)
        for convention, explained in sign_pair_counts(ledger, rules, preceding).items():
            counts[convention] += explained
        if ledger.height:
            closing = ledger.filter(pl.col("created_at") == pl.col("created_at").max())
            # A copy: a filtered view would keep the whole slice alive through the next one.
            preceding = pl.DataFrame(
                closing.select("account", "created_at", "balance_after").rows(),
                schema={n: closing.schema[n] for n in ("account", "created_at", "balance_after")},
                orient="row",
            )
    return choose_sign_convention(counts, default)
