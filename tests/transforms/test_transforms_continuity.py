"""Continuity: the promise that no balance movement is hidden, checked entry by entry."""

from __future__ import annotations

import itertools
from collections import defaultdict
from decimal import Decimal

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.transforms.ledger_strategies import generic_chains, small_chains
from tests.transforms.ledgers import Chain, ledger_frame, money, seconds, shuffled
from transforms.breaks import BREAKS_SCHEMA
from transforms.continuity import reconcile_continuity, reconcile_each_account
from transforms.micros import MONEY

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_breaks_frame_has_the_warehouse_schema() -> None:
    result = reconcile_continuity(ledger_frame(Chain(money("-1"), seconds(0))))
    assert result.breaks.schema == pl.Schema(BREAKS_SCHEMA)
    assert result.breaks.height == 0
    assert result.ordered["chain_position"].to_list() == [1]
    assert result.ordered.schema["balance_before"] == MONEY
    assert result.ordered.schema["signed_amount"] == MONEY


def test_tie_group_in_wrong_api_order_is_chained_by_balances() -> None:
    # A grant and usages in the same millisecond: balances, not row order, decide.
    chain = Chain(money("-5", "1000", "-2.5", "-1"), seconds(0, 1, 1, 1), opening=Decimal(10))
    frame = ledger_frame(chain)
    for seed in range(5):
        result = reconcile_continuity(shuffled(frame, seed))
        assert result.breaks.height == 0
        assert result.ordered["entry_id"].to_list() == [f"acme-{i:05d}" for i in range(4)]


def test_gap_inside_tie_group_is_reported_once_with_detail() -> None:
    chain = Chain(
        money("-1.5", "20", "-3.25", "-0.75", "5", "-2"),
        seconds(0, 0, 0, 1, 1, 2),
        opening=Decimal(100),
        gaps={4: Decimal("0.5")},
    )
    result = reconcile_continuity(shuffled(ledger_frame(chain), 7))
    assert result.breaks.height == 1
    row = result.breaks.row(0, named=True)
    assert row["kind"] == "continuity"
    assert (row["expected_balance"], row["observed_balance"]) == chain.true_pair(4)
    assert row["gap"] == Decimal("0.5")
    assert (row["before_entry_id"], row["after_entry_id"]) == ("acme-00003", "acme-00004")
    assert row["ambiguous"] is False
    assert "expected 114.500000, actual 115.000000, difference 0.500000" in row["detail"]


def test_empty_ledger_has_no_breaks() -> None:
    result = reconcile_continuity(ledger_frame())
    assert result.ordered.height == 0
    assert result.breaks.schema == pl.Schema(BREAKS_SCHEMA)


def test_tolerance_hides_small_differences_and_is_reported() -> None:
    chain = Chain(money("-1", "-1"), seconds(0, 1), gaps={1: Decimal("0.0001")})
    strict = reconcile_continuity(ledger_frame(chain))
    loose = reconcile_continuity(ledger_frame(chain), tolerance=Decimal("0.001"))
    assert strict.breaks.height == 1
    assert loose.breaks.height == 0
    assert loose.tolerance == Decimal("0.001")


def test_accounts_are_chained_separately() -> None:
    a = Chain(money("-1", "-2"), seconds(0, 0), account="a", opening=Decimal(50))
    b = Chain(money("-1", "-2"), seconds(0, 0), account="b", opening=Decimal(7))
    result = reconcile_continuity(ledger_frame(a, b))
    assert result.breaks.height == 0
    assert result.ordered.group_by("account").agg(pl.col("chain_position").max()).sort("account")[
        "chain_position"
    ].to_list() == [2, 2]


def test_unsigned_convention_negates_debit_types() -> None:
    chain = Chain(money("-3", "10", "-1"), seconds(0, 1, 1), types=["Usage", "TopUp", "Expiry"])
    frame = ledger_frame(chain).with_columns(pl.col("amount").abs())
    assert reconcile_continuity(frame, convention="unsigned").breaks.height == 0
    assert reconcile_continuity(frame, convention="signed").breaks.height > 0


@FAST
@given(st.data())
def test_any_permutation_of_a_continuous_ledger_has_no_break(data: st.DataObject) -> None:
    chains = [data.draw(generic_chains(account="acme"))]
    if data.draw(st.booleans()):
        chains.append(data.draw(generic_chains(account="beta")))
    frame = ledger_frame(*chains)
    seed = data.draw(st.integers(0, 2**16))
    first = reconcile_continuity(frame)
    again = reconcile_continuity(shuffled(frame, seed))
    assert first.breaks.height == 0
    assert again.breaks.height == 0
    assert again.ordered.equals(first.ordered)
    expected = [r["entry_id"] for c in chains for r in c.rows()]
    assert first.ordered["entry_id"].to_list() == expected


@FAST
@given(st.data())
def test_injected_gaps_are_found_exactly_once(data: st.DataObject) -> None:
    gap_count = data.draw(st.integers(1, 3))
    chain = data.draw(generic_chains(gap_count=gap_count))
    frame = shuffled(ledger_frame(chain), data.draw(st.integers(0, 2**16)))
    breaks = reconcile_continuity(frame).breaks
    assert breaks.height == gap_count
    if not breaks["ambiguous"].any():
        found = sorted(zip(breaks["expected_balance"], breaks["observed_balance"], strict=True))
        assert found == sorted(chain.true_pair(i) for i in chain.gaps)
        assert sorted(breaks["gap"]) == sorted(chain.gaps.values())


@FAST
@given(st.data())
def test_gaps_at_the_first_and_last_pair_and_between_days(data: st.DataObject) -> None:
    n = data.draw(st.integers(2, 6))
    amounts = [Decimal(-(2**i)) for i in range(n)]
    tie_first = data.draw(st.booleans())
    offsets = seconds(*([0, 0] if tie_first else [0, 1]), *[86400 * k for k in range(1, n - 1)])
    position = data.draw(st.sampled_from([1, n - 1]))
    gap = Decimal(data.draw(st.sampled_from([-(2**n), 2**n])))
    chain = Chain(amounts, offsets, gaps={position: gap})
    breaks = reconcile_continuity(ledger_frame(chain)).breaks
    assert breaks.height == 1
    # Two entries sharing the only timestamp, one gap: either order explains it with one break.
    truly_ambiguous = n == 2 and tie_first
    assert breaks["ambiguous"].to_list() == [truly_ambiguous]
    if not truly_ambiguous:
        assert breaks["gap"].to_list() == [gap]
        assert (breaks["expected_balance"][0], breaks["observed_balance"][0]) == chain.true_pair(
            position
        )


def _brute_force(chain: Chain) -> tuple[int, set[tuple[tuple[Decimal, Decimal], ...]]]:
    """Fewest breaks over every order respecting createdAt, and the break multisets reaching it."""
    groups: dict[object, list[tuple[Decimal, Decimal]]] = defaultdict(list)
    for row in chain.rows():
        after = row["balance_after"]
        groups[row["created_at"]].append((after - row["amount"], after))
    ordered_groups = [groups[k] for k in sorted(groups)]
    best, results = None, set()
    for orders in itertools.product(*(itertools.permutations(g) for g in ordered_groups)):
        sequence = [edge for group in orders for edge in group]
        pairs = tuple(
            sorted(
                (prev[1], edge[0])
                for prev, edge in itertools.pairwise(sequence)
                if prev[1] != edge[0]
            )
        )
        if best is None or len(pairs) < best:
            best, results = len(pairs), {pairs}
        elif len(pairs) == best:
            results.add(pairs)
    assert best is not None
    return best, results


@settings(max_examples=150, deadline=None)
@given(small_chains(max_entries=6))
def test_fewest_breaks_and_ambiguity_match_brute_force(chain: Chain) -> None:
    best, results = _brute_force(chain)
    breaks = reconcile_continuity(ledger_frame(chain)).breaks
    assert breaks.height == best
    # Ambiguous exactly when the fewest-break orders disagree on the breaks they report.
    assert breaks["ambiguous"].any() == (len(results) > 1)
    found = tuple(sorted(zip(breaks["expected_balance"], breaks["observed_balance"], strict=True)))
    assert found in results


def test_ambiguous_only_when_the_balances_cannot_tell() -> None:
    # Two debits of the same size at one timestamp, then a gap: 100 -> 99, 99 -> 98 and a
    # 98.5 -> 97.5 debit: one order only explains it with one break (98 -> 98.5).
    clear = Chain(
        money("-1", "-1", "-1"), seconds(0, 1, 1), opening=Decimal(100), gaps={2: Decimal("0.5")}
    )
    clear_breaks = reconcile_continuity(ledger_frame(clear)).breaks
    assert clear_breaks["ambiguous"].to_list() == [False]
    # A zero-amount entry at an unrelated balance inside a tie group that has neighbours on both
    # sides: it can sit before or after the debit, and the two orders report different breaks.
    chain = Chain(money("-1", "-10", "-5"), seconds(0, 1, 2), opening=Decimal(101))
    frame = ledger_frame(chain)
    stray = frame.filter(pl.col("entry_id") == "acme-00001").with_columns(
        entry_id=pl.lit("stray"),
        amount=pl.lit(Decimal(0)).cast(MONEY),
        balance_after=pl.lit(Decimal(50)).cast(MONEY),
    )
    result = reconcile_continuity(pl.concat([frame, stray]))
    assert result.breaks.height == 2
    assert result.breaks["ambiguous"].all()
    assert result.ambiguous_groups == 1
    assert "ordered in several ways" in result.breaks["detail"][0]
    # The same stray entry as the last entry of the ledger: after the debit, one break, no doubt.
    result = reconcile_continuity(pl.concat([frame.head(2), stray]))
    assert result.breaks["ambiguous"].to_list() == [False]
    assert result.breaks["after_entry_id"].to_list() == ["stray"]


@FAST
@given(st.data())
def test_one_pass_over_many_accounts_equals_each_accounts_own(data: st.DataObject) -> None:
    """The agency pass (`reconcile_each_account`) gives each account exactly what a pass over
    it alone gives: its chain, its breaks and its own count of searched and ambiguous groups."""
    names = data.draw(st.lists(st.sampled_from(["acme", "beta", "b", "zulu"]), min_size=1,
                               max_size=4, unique=True))  # fmt: skip
    chains = [
        data.draw(
            small_chains(account=name, max_entries=7)
            if data.draw(st.booleans())
            else generic_chains(account=name, gap_count=data.draw(st.integers(0, 2)))
        )
        for name in names
    ]
    frame = shuffled(ledger_frame(*chains), data.draw(st.integers(0, 2**16)))
    tolerance = data.draw(st.sampled_from([Decimal(0), Decimal(1)]))
    together = reconcile_each_account(frame, tolerance=tolerance)
    assert sorted(together) == sorted(names)
    for name in names:
        alone = reconcile_continuity(frame.filter(pl.col("account") == name), tolerance=tolerance)
        mine = together[name]
        assert mine.ordered.equals(alone.ordered)
        assert mine.breaks.equals(alone.breaks)
        assert (mine.searched_groups, mine.ambiguous_groups, mine.ambiguous_days) == (
            alone.searched_groups, alone.ambiguous_groups, alone.ambiguous_days)  # fmt: skip
