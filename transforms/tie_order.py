"""Order of the entries that share a createdAt, decided by their balances.

Timestamps tie often (concurrent conversations, a grant and a usage in the same millisecond), and
the API's row order means nothing, so within a tie group the balances decide. A continuous order
of a group is an Euler trail from the balance the previous entry left to where the next entry
starts (see `euler_trail`). When none exists, the order with the fewest breaks is wanted, and a
group is flagged ambiguous when the balances do not determine which breaks there are.

Consecutive tie groups that both need a search form a cluster and are decided together: the end
one group chooses is the start of the next. A cluster is first tried greedily (the common case:
a continuous order exists); otherwise a Viterbi pass over groups keeps, for each balance a group
can end at, the cheapest way to get there. Groups of at most `exhaustive_limit` entries are
searched exhaustively (dynamic programming over subsets), which also decides ambiguity exactly;
larger groups use the Euler construction and are called ambiguous whenever 2+ breaks are needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from transforms.euler_trail import (
    MAX_FREE_CANDIDATES,
    BreakPair,
    Edge,
    break_pairs,
    fewest_jump_order,
    free_ends,
    free_starts,
)

Outcome = tuple[BreakPair, ...]
_MAX_OUTCOMES = 32
_WALK_LIMIT = 6  # depth-first search is exponential only for many equal balances


@dataclass(frozen=True)
class ClusterResolution:
    """Chosen order per group (indices into that group's edges) and what it costs.

    `breaks` counts breaks inside the groups, against `start` and against `end`. `ambiguous` is
    True when several fewest-break orders report different breaks (as multisets of expected and
    observed balances), or when a large group needed 2+ breaks and was not searched exhaustively.
    """

    orders: tuple[tuple[int, ...], ...]
    breaks: int
    ambiguous: bool


@dataclass
class _Path:
    cost: int
    outcomes: set[Outcome]
    orders: tuple[tuple[int, ...], ...]
    exact: bool = True


def resolve_cluster(
    groups: Sequence[Sequence[Edge]],
    start: int | None,
    end: int | None,
    tolerance: int = 0,
    exhaustive_limit: int = 8,
) -> ClusterResolution:
    """Fewest-break orders for consecutive tie groups between two fixed balances.

    `start` is the balance_after of the entry before the cluster (None at an account's start);
    `end` the balance_before of the entry after it (None at an account's end).
    """
    greedy = _continuous_orders(groups, start, end, tolerance)
    if greedy is not None:
        return ClusterResolution(greedy, 0, False)
    states: dict[int | None, _Path] = {start: _Path(0, {()}, ())}
    for edges in groups:
        following: dict[int | None, _Path] = {}
        for balance, path in states.items():
            for finish, step in _transitions(edges, balance, tolerance, exhaustive_limit).items():
                _merge(following, finish, _extend(path, step))
        states = following
    best: _Path | None = None
    for finish, path in states.items():
        closing = _Path(0, {()}, ())
        if end is not None and finish is not None and abs(end - finish) > tolerance:
            closing = _Path(1, {((finish, end),)}, ())
        candidate = _extend(path, closing)
        if best is None or candidate.cost < best.cost:
            best = candidate
        elif candidate.cost == best.cost:
            best.outcomes |= candidate.outcomes
            best.exact = best.exact and candidate.exact
    assert best is not None
    ambiguous = len(best.outcomes) > 1 or (not best.exact and best.cost > 1)
    return ClusterResolution(best.orders, best.cost, ambiguous)


def resolve_tie_group(
    edges: Sequence[Edge],
    start: int | None,
    end: int | None,
    tolerance: int = 0,
    exhaustive_limit: int = 8,
) -> ClusterResolution:
    """One group alone: `resolve_cluster` with a single group."""
    return resolve_cluster([edges], start, end, tolerance, exhaustive_limit)


def _continuous_orders(
    groups: Sequence[Sequence[Edge]], start: int | None, end: int | None, tolerance: int
) -> tuple[tuple[int, ...], ...] | None:
    """Orders with no break at all, found group by group, or None when that fails."""
    orders: list[tuple[int, ...]] = []
    previous = start
    for position, edges in enumerate(groups):
        if position + 1 < len(groups):
            targets: list[int] | None = sorted({b for b, _ in groups[position + 1]})
        else:
            targets = [end] if end is not None else None
        found = _continuous_order(edges, previous, targets, tolerance)
        if found is None:
            return None
        orders.append(found)
        previous = edges[found[-1]][1]
    return tuple(orders)


def _continuous_order(
    edges: Sequence[Edge], start: int | None, targets: list[int] | None, tolerance: int
) -> tuple[int, ...] | None:
    if len(edges) <= _WALK_LIMIT:
        return _walk(edges, start, targets, tolerance)
    starts = [start] if start is not None else free_starts(edges)
    for start_vertex in starts:
        for target in (targets or free_ends(edges))[:MAX_FREE_CANDIDATES]:
            order = tuple(fewest_jump_order(edges, start_vertex, target))
            counted_end = target if targets else None
            if not break_pairs(edges, order, start, counted_end, tolerance):
                return order
    return None


def _walk(
    edges: Sequence[Edge], start: int | None, targets: list[int] | None, tolerance: int
) -> tuple[int, ...] | None:
    """Depth-first search for a continuous order of a small group (most groups have 2 entries).

    Cheaper than building the Euler construction when the answer is a simple chain.
    """
    n = len(edges)
    order: list[int] = []
    used = [False] * n

    def fits(a: int | None, b: int) -> bool:
        return a is None or abs(a - b) <= tolerance

    def extend(balance: int | None) -> bool:
        if len(order) == n:
            return targets is None or any(fits(balance, t) for t in targets)
        for i in range(n):
            if not used[i] and fits(balance, edges[i][0]):
                used[i] = True
                order.append(i)
                if extend(edges[i][1]):
                    return True
                order.pop()
                used[i] = False
        return False

    return tuple(order) if extend(start) else None


def _extend(path: _Path, step: _Path) -> _Path:
    outcomes = {tuple(sorted(a + b)) for a in path.outcomes for b in step.outcomes}
    return _Path(
        path.cost + step.cost,
        _capped(outcomes),
        path.orders + step.orders,
        path.exact and step.exact,
    )


def _merge(states: dict[int | None, _Path], balance: int | None, path: _Path) -> None:
    current = states.get(balance)
    if current is None or path.cost < current.cost:
        states[balance] = path
    elif path.cost == current.cost:
        current.outcomes = _capped(current.outcomes | path.outcomes)
        current.exact = current.exact and path.exact


def _capped(outcomes: set[Outcome]) -> set[Outcome]:
    """Two distinct outcomes already prove ambiguity; keeping a few more is only for reports."""
    if len(outcomes) <= _MAX_OUTCOMES:
        return outcomes
    return set(sorted(outcomes)[:_MAX_OUTCOMES])


def _transitions(
    edges: Sequence[Edge], start: int | None, tolerance: int, exhaustive_limit: int
) -> dict[int, _Path]:
    """For each balance the group can end at: the cheapest orders from `start` that end there."""
    if len(edges) <= exhaustive_limit:
        return _exhaustive_transitions(edges, start, tolerance)
    return _construction_transitions(edges, start, tolerance)


def _construction_transitions(
    edges: Sequence[Edge], start: int | None, tolerance: int
) -> dict[int, _Path]:
    found: dict[int, _Path] = {}
    starts = [start] if start is not None else free_starts(edges)
    ends = sorted({a for _, a in edges})[:MAX_FREE_CANDIDATES]
    for start_vertex in starts:
        for target in ends:
            order = tuple(fewest_jump_order(edges, start_vertex, target))
            pairs = break_pairs(edges, order, start, None, tolerance)
            finish = edges[order[-1]][1]
            _merge(found, finish, _Path(len(pairs), {pairs}, (order,), exact=False))  # type: ignore[arg-type]
    return found


def _exhaustive_transitions(
    edges: Sequence[Edge], start: int | None, tolerance: int
) -> dict[int, _Path]:
    """Every order, by dynamic programming over (entries used, last entry).

    The future cost only depends on the last balance and the entries left, so keeping the
    cheapest partial outcomes per state is exact.
    """
    n = len(edges)
    befores = [b for b, _ in edges]
    afters = [a for _, a in edges]
    table: list[dict[int, _Path]] = [{} for _ in range(1 << n)]
    for i in range(n):
        if start is not None and abs(start - befores[i]) > tolerance:
            table[1 << i][i] = _Path(1, {((start, befores[i]),)}, ((i,),))
        else:
            table[1 << i][i] = _Path(0, {()}, ((i,),))
    for mask in range(1, 1 << n):
        for last, path in table[mask].items():
            after = afters[last]
            for nxt in range(n):
                if mask >> nxt & 1:
                    continue
                before = befores[nxt]
                order = ((*path.orders[0], nxt),)
                if abs(before - after) > tolerance:
                    outcomes = {tuple(sorted((*o, (after, before)))) for o in path.outcomes}
                    step = _Path(path.cost + 1, outcomes, order)
                else:
                    step = _Path(path.cost, set(path.outcomes), order)
                _merge(table[mask | 1 << nxt], nxt, step)  # type: ignore[arg-type]
    found: dict[int, _Path] = {}
    for last, path in table[(1 << n) - 1].items():
        _merge(found, afters[last], _Path(path.cost, set(path.outcomes), path.orders))  # type: ignore[arg-type]
    return found
