"""Continuity across slices: each slice reconciled as the whole-ledger run would see it.

The whole-ledger run decides each tie group from its neighbours' balances: the group before
gives where it starts, the group after where it should end, and consecutive undecided groups
are decided together. A slice boundary therefore must not fall inside such a dependency. It
never does here: a slice ends on a day whose last createdAt holds one entry (`slices`), and an
entry alone at its createdAt is never reordered nor searched, so it is the fixed end of what
comes before and the fixed start of what comes after. Prepending it to the next slice gives
`reconcile_continuity` everything the whole run would have looked at: the balance the first
entry (or first tie group) must start from, a break exactly at the boundary, and the account's
first entry being the only one without a predecessor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

import polars as pl

from transforms.continuity import Reconciliation, reconcile_continuity, reconcile_each_account
from transforms.entry_type import DEFAULT_RULES, EntryTypeRules
from transforms.normalize import SignConvention


@dataclass(frozen=True)
class ChainCarry:
    """What a slice needs from the slices before it.

    `last` is the previous slice's last entry in chain order (one row of the ordered ledger,
    its chain_position already counted over the whole ledger), None before the first slice.
    `entries` is how many entries came before: the chain_position offset. `closes_alone` says
    whether `last` was alone at its createdAt, which is what makes the boundary safe.
    """

    last: pl.DataFrame | None = None
    entries: int = 0
    closes_alone: bool = True


@dataclass(frozen=True)
class SliceReconciliation:
    """A slice's entries in chain order (positions over the whole ledger) and its breaks."""

    ordered: pl.DataFrame
    breaks: pl.DataFrame
    ambiguous_groups: int
    carry: ChainCarry
    ambiguous_days: dict[date, int] = field(default_factory=dict)


def reconcile_slice(
    ledger: pl.DataFrame,
    carry: ChainCarry,
    *,
    convention: SignConvention = "signed",
    tolerance: Decimal = Decimal(0),
    rules: EntryTypeRules = DEFAULT_RULES,
) -> SliceReconciliation:
    """`reconcile_continuity` of one slice (whole days of one account, after `carry.last`)."""
    window = _window(ledger, carry)
    result = reconcile_continuity(window, convention=convention, tolerance=tolerance, rules=rules)
    return _continued(ledger, carry, result)


def reconcile_slices(
    slices: Mapping[str, tuple[pl.DataFrame, ChainCarry]],
    *,
    convention: SignConvention = "signed",
    tolerance: Decimal = Decimal(0),
    rules: EntryTypeRules = DEFAULT_RULES,
) -> dict[str, SliceReconciliation]:
    """`reconcile_slice` of one slice of each account (its ledger and carry), in one pass over
    all of them (`reconcile_each_account`): each account's result is the one it gets alone."""
    windows = [_window(ledger, carry) for ledger, carry in slices.values()]
    if not windows:
        return {}
    together = reconcile_each_account(
        pl.concat(windows, how="vertical_relaxed"),
        convention=convention,
        tolerance=tolerance,
        rules=rules,
    )
    return {
        account: _continued(ledger, carry, together[account])
        for account, (ledger, carry) in slices.items()
        if account in together
    }


def _window(ledger: pl.DataFrame, carry: ChainCarry) -> pl.DataFrame:
    """The slice with the entry before it (``carry.last``) prepended."""
    previous = carry.last
    if previous is not None and not carry.closes_alone:
        raise ValueError("a slice must end on a createdAt of one entry; this one ends in a tie")
    if previous is None:
        return ledger
    return pl.concat([previous.select(ledger.columns), ledger], how="vertical_relaxed")


def _continued(
    ledger: pl.DataFrame, carry: ChainCarry, result: Reconciliation
) -> SliceReconciliation:
    """The window's result as the slice's: the prepended entry dropped, positions counted on
    from the slices before, and the carry for the next."""
    previous = carry.last
    ordered = result.ordered
    offset = carry.entries
    if previous is not None:
        if ordered["entry_id"][0] != previous["entry_id"][0]:
            raise ValueError("the slice overlaps the entries before it")
        ordered = ordered.slice(1)
        offset -= 1
    ordered = ordered.with_columns(pl.col("chain_position") + offset)
    closing = ledger.filter(pl.col("created_at") == pl.col("created_at").max()).height
    following = ChainCarry(
        last=_detached(ordered.tail(1)) if ordered.height else previous,
        entries=carry.entries + ordered.height,
        closes_alone=closing == 1 if ordered.height else carry.closes_alone,
    )
    return SliceReconciliation(
        ordered, result.breaks, result.ambiguous_groups, following, result.ambiguous_days
    )


def _detached(row: pl.DataFrame) -> pl.DataFrame:
    """A copy that shares no buffer with the slice, so the slice's memory is freed with it."""
    return pl.DataFrame(row.rows(), schema=row.schema, orient="row")
