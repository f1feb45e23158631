"""The per-group search against brute force over every order of a group."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.euler_trail import break_pairs
from transforms.tie_order import resolve_cluster, resolve_tie_group

balances = st.integers(0, 5)
edges_strategy = st.lists(st.tuples(balances, balances), min_size=1, max_size=6)
anchor = st.none() | balances


def _brute_force(
    edges: list[tuple[int, int]], start: int | None, end: int | None
) -> tuple[int, set[tuple[tuple[int, int], ...]]]:
    best, outcomes = None, set()
    for order in itertools.permutations(range(len(edges))):
        pairs = break_pairs(edges, order, start, end)
        if best is None or len(pairs) < best:
            best, outcomes = len(pairs), {pairs}
        elif len(pairs) == best:
            outcomes.add(pairs)
    assert best is not None
    return best, outcomes


@settings(max_examples=300, deadline=None)
@given(edges=edges_strategy, start=anchor, end=anchor)
def test_euler_construction_reaches_the_fewest_breaks(
    edges: list[tuple[int, int]], start: int | None, end: int | None
) -> None:
    best, _ = _brute_force(edges, start, end)
    resolution = resolve_tie_group(edges, start, end, exhaustive_limit=0)
    assert sorted(resolution.orders[0]) == list(range(len(edges)))
    assert len(break_pairs(edges, resolution.orders[0], start, end)) == resolution.breaks == best


@settings(max_examples=300, deadline=None)
@given(edges=edges_strategy, start=anchor, end=anchor)
def test_exhaustive_search_flags_exactly_the_ambiguous_groups(
    edges: list[tuple[int, int]], start: int | None, end: int | None
) -> None:
    best, outcomes = _brute_force(edges, start, end)
    resolution = resolve_tie_group(edges, start, end)
    assert resolution.breaks == best
    assert resolution.ambiguous == (len(outcomes) > 1)
    assert break_pairs(edges, resolution.orders[0], start, end) in outcomes


def test_cluster_uses_the_end_the_next_group_needs() -> None:
    # First group can end at 0 or 1 (a circuit with a free start); the second needs 0.
    groups = [[(0, 1), (1, 0)], [(0, 5), (5, 5)]]
    resolution = resolve_cluster(groups, None, None)
    assert resolution.breaks == 0
    first, second = resolution.orders
    assert groups[0][first[-1]][1] == 0
    assert [groups[1][i] for i in second] == [(0, 5), (5, 5)]


def test_large_group_with_one_gap_is_not_ambiguous() -> None:
    chain = [(100 - i, 99 - i) for i in range(20)]
    gapped = chain[:10] + [(b + 1000, a + 1000) for b, a in chain[10:]]
    resolution = resolve_tie_group(list(reversed(gapped)), 100, 1080)
    assert resolution.breaks == 1
    assert not resolution.ambiguous
