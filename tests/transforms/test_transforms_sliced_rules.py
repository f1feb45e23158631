"""The rules that read a ledger in parts: the parts add up to the whole.

Sign inference counts pairs per slice (with the entries of the timestamp before it) and decides
once; the breakdown's ledger side sums debits per slice. The whole is the same rules over the
whole ledger at once. Slices here are runs of whole days cut
anywhere, as reconciliation cuts them.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reconciliation.warehouse_ledgers import snapshot_rows
from tests.transforms.ledger_strategies import generic_chains, small_chains
from tests.transforms.ledgers import T0, ledger_frame, unsigned
from transforms.continuity import reconcile_continuity
from transforms.cross_checks import (
    LedgerDebits,
    compare_breakdown,
    ledger_debits,
    read_breakdown,
)
from transforms.normalize import choose_sign_convention, sign_pair_counts

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _day_slices(ledger: pl.DataFrame, cuts: list[int]) -> list[pl.DataFrame]:
    """The ledger cut before each day index in `cuts` (days counted from T0)."""
    day = (pl.col("created_at") - pl.lit(T0)).dt.total_days()
    bounds = [None, *sorted(set(cuts)), None]
    parts = []
    for lo, hi in itertools.pairwise(bounds):
        keep = pl.lit(True)
        if lo is not None:
            keep &= day >= lo
        if hi is not None:
            keep &= day < hi
        parts.append(ledger.filter(keep))
    return [p for p in parts if p.height]


@FAST
@given(
    chain=st.one_of(generic_chains(gap_count=1), small_chains(max_entries=12)),
    cuts=st.lists(st.integers(0, 40), max_size=4),
    as_unsigned=st.booleans(),
)
def test_pair_counts_over_day_slices_add_up_to_the_whole(
    chain: object, cuts: list[int], as_unsigned: bool
) -> None:
    ledger = ledger_frame(chain)  # type: ignore[arg-type]
    if as_unsigned:
        ledger = unsigned(ledger)
    totals = {"signed": 0, "unsigned": 0}
    preceding = None
    for part in _day_slices(ledger, cuts):
        for convention, count in sign_pair_counts(part, preceding=preceding).items():
            totals[convention] += count
        preceding = part.filter(pl.col("created_at") == pl.col("created_at").max())
    whole = sign_pair_counts(ledger)
    assert totals == whole
    assert choose_sign_convention(totals) == choose_sign_convention(whole)


@FAST
@given(
    chain=generic_chains(max_entries=20),
    cuts=st.lists(st.integers(0, 40), max_size=4),
    start_day=st.integers(0, 5),
    days=st.integers(1, 30),
)
def test_breakdown_debits_over_slices_add_up_to_the_whole(
    chain: object, cuts: list[int], start_day: int, days: int
) -> None:
    ordered = reconcile_continuity(ledger_frame(chain)).ordered  # type: ignore[arg-type]
    start = datetime(2025, 1, 1, tzinfo=UTC) + timedelta(days=start_day)
    doc = {
        "periodStart": start.isoformat(),
        "periodEnd": (start + timedelta(days=days)).isoformat(),
        "items": [{"agentId": "agt_a", "campaignId": "cmp_x", "channel": "Phone", "credits": 1}],
    }
    landed = snapshot_rows("breakdown_snapshots", doc, "acme", fetched_at=start)
    reported = read_breakdown(landed.rows)
    assert not isinstance(reported, str)
    totals: dict = {}
    for part in _day_slices(ordered, cuts):
        for key, micros in ledger_debits(part, reported.start, reported.end).items():
            totals[key] = totals.get(key, 0) + micros
    sliced = compare_breakdown(reported, LedgerDebits("acme", totals))
    whole_debits = ledger_debits(ordered, reported.start, reported.end)
    whole = compare_breakdown(reported, LedgerDebits("acme", whole_debits))
    assert (sliced.status, sliced.message) == (whole.status, whole.message)
    assert sliced.breaks.equals(whole.breaks)
