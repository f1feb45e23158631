"""Order of the entries that share a createdAt, decided by their balances.

Timestamps tie often (concurrent conversations, a grant and a usage in the same millisecond), and
the API's row order means nothing, so within a tie group the balances decide. Each entry is an edge
balance_before -> balance_after of a multigraph; a continuous order is an Euler trail that starts
at the balance left by the previous entry and ends where the next entry starts. When no such trail
exists, the order with the fewest breaks is wanted, and a group is flagged ambiguous when the
balances do not determine which breaks there are.

Everything here works on integer micro-credits and plain Python: only the few groups that the
vectorized pass could not chain reach this module.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

Edge = tuple[int, int]
BreakPair = tuple[int, int]
Vertex = int | str

_START = "virtual-start"
_END = "virtual-end"
_MAX_FREE_CANDIDATES = 16


@dataclass(frozen=True)
class TieResolution:
    """An order of a tie group (indices into its edges) and what it costs.

    `breaks` counts breaks inside the group, against the start balance and against the next
    group's start. `ambiguous` is True when several fewest-break orders report different breaks
    (as pairs of expected and observed balances). `exhaustive` says whether every order was
    examined (small groups) or the Euler construction alone decided (large groups, where
    ambiguity is assumed whenever more than one break is needed).
    """

    order: tuple[int, ...]
    breaks: int
    ambiguous: bool
    exhaustive: bool


def break_pairs(
    edges: Sequence[Edge],
    order: Sequence[int],
    start: int | None,
    end: int | None,
    tolerance: int = 0,
) -> tuple[BreakPair, ...]:
    """The (expected, observed) balance of every break of `order`, sorted (a multiset)."""
    pairs: list[BreakPair] = []
    previous = start
    for index in order:
        before, after = edges[index]
        if previous is not None and abs(before - previous) > tolerance:
            pairs.append((previous, before))
        previous = after
    if end is not None and previous is not None and abs(end - previous) > tolerance:
        pairs.append((previous, end))
    return tuple(sorted(pairs))


def resolve_tie_group(
    edges: Sequence[Edge],
    start: int | None,
    ends: Sequence[int] | None,
    tolerance: int = 0,
    exhaustive_limit: int = 8,
) -> TieResolution:
    """The fewest-break order of `edges` between `start` and one of `ends`.

    `start` is the balance_after of the previous entry (None for an account's first group);
    `ends` are the balances the next group can start from (None for the last group). The Euler
    construction runs first; when it needs breaks and the group is small, an exhaustive search
    over orders confirms the minimum and decides ambiguity exactly.
    """
    if not edges:
        return TieResolution((), 0, False, True)
    starts = [start] if start is not None else _free_starts(edges)
    end_choices = sorted(set(ends)) if ends else []
    targets: list[int] = end_choices or _free_ends(edges)
    best: tuple[int, ...] | None = None
    best_cost = -1
    outcomes: set[tuple[BreakPair, ...]] = set()
    for start_vertex in starts:
        for target in targets:
            order = tuple(_euler_order(edges, start_vertex, target))
            counted_end = target if end_choices else None
            pairs = break_pairs(edges, order, start, counted_end, tolerance)
            if best is None or len(pairs) < best_cost:
                best, best_cost, outcomes = order, len(pairs), {pairs}
            elif len(pairs) == best_cost:
                outcomes.add(pairs)
    assert best is not None
    if best_cost == 0:
        return TieResolution(best, 0, False, True)
    if len(edges) <= exhaustive_limit:
        cost, results, order = _exhaustive(edges, start, end_choices or None, tolerance)
        if cost < best_cost:
            best = order
        return TieResolution(best, min(cost, best_cost), len(results) > 1, True)
    return TieResolution(best, best_cost, best_cost > 1 or len(outcomes) > 1, False)


def _free_starts(edges: Sequence[Edge]) -> list[int]:
    """Where an unanchored group may start: surplus balances first, then every other balance.

    Any balance may be the best start (a disconnected cycle costs one break less at the very
    start), so all are tried, up to a cap that only very large first groups reach.
    """
    excess = _excess(edges)
    surplus = sorted(v for v, e in excess.items() if e > 0)
    rest = sorted({b for b, _ in edges} - set(surplus))
    return (surplus + rest)[:_MAX_FREE_CANDIDATES]


def _free_ends(edges: Sequence[Edge]) -> list[int]:
    excess = _excess(edges)
    deficit = sorted(v for v, e in excess.items() if e < 0)
    rest = sorted({a for _, a in edges} - set(deficit))
    return (deficit + rest)[:_MAX_FREE_CANDIDATES]


def _excess(edges: Sequence[Edge]) -> dict[int, int]:
    excess: dict[int, int] = defaultdict(int)
    for before, after in edges:
        excess[before] += 1
        excess[after] -= 1
    return excess


class _Components:
    """Union-find over vertices: which balances are linked by some entry."""

    def __init__(self) -> None:
        self.parent: dict[Vertex, Vertex] = {}

    def find(self, v: Vertex) -> Vertex:
        self.parent.setdefault(v, v)
        root = v
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[v] != root:
            self.parent[v], v = root, self.parent[v]
        return root

    def union(self, a: Vertex, b: Vertex) -> None:
        self.parent[self.find(a)] = self.find(b)


def _euler_order(edges: Sequence[Edge], start: int, end: int) -> list[int]:
    """An order of every edge that is a trail from `start` to `end` with the fewest jumps.

    Jump edges are added from surplus-in to surplus-out balances, chaining the weakly connected
    components (start's first, end's last) so that the augmented graph has an Euler trail; each
    jump is a break. Hierholzer's algorithm then walks it, real edges before jumps.
    """
    all_edges: list[tuple[Vertex, Vertex, int]] = [(b, a, i) for i, (b, a) in enumerate(edges)]
    all_edges.append((_START, start, -1))
    all_edges.append((end, _END, -1))
    components = _Components()
    excess: dict[Vertex, int] = defaultdict(int)
    for u, v, _ in all_edges:
        components.union(u, v)
        excess[u] += 1
        excess[v] -= 1
    members: dict[Vertex, list[int]] = defaultdict(list)
    for u, v, _ in all_edges:
        for vertex in (u, v):
            if isinstance(vertex, int):
                members[components.find(vertex)].append(vertex)
    sources: dict[Vertex, list[int]] = defaultdict(list)
    sinks: dict[Vertex, list[int]] = defaultdict(list)
    for vertex in sorted(v for v in excess if isinstance(v, int)):
        root = components.find(vertex)
        if excess[vertex] > 0:
            sources[root].extend([vertex] * excess[vertex])
        elif excess[vertex] < 0:
            sinks[root].extend([vertex] * -excess[vertex])
    first, last = components.find(_START), components.find(_END)
    others = sorted((r for r in members if r not in (first, last)), key=lambda r: min(members[r]))
    for root in others:
        if not sources[root]:
            # A balanced component (a cycle, a zero amount) is entered and left at one balance.
            entry = min(members[root])
            sources[root].append(entry)
            sinks[root].append(entry)
    chain = [first, *others]
    if last != first:
        chain.append(last)
    elif others:
        if not sinks[first]:
            sources[first].append(start)
            sinks[first].append(start)
        chain.append(first)
    jumps: list[tuple[int, int]] = []
    for a, b in itertools.pairwise(chain):
        jumps.append((sinks[a].pop(0), sources[b].pop(0)))
    for root in dict.fromkeys(chain):  # deterministic: string hashes vary between processes
        jumps.extend(zip(sinks[root], sources[root], strict=True))
    adjacency: dict[Vertex, list[tuple[Vertex, int]]] = defaultdict(list)
    for u, v, index in all_edges:
        if index >= 0:
            adjacency[u].append((v, index))
    for u, v in jumps:
        adjacency[u].append((v, -2))
    adjacency[_START].append((start, -1))
    adjacency[end].append((_END, -1))
    return _hierholzer(adjacency)


def _hierholzer(adjacency: dict[Vertex, list[tuple[Vertex, int]]]) -> list[int]:
    """Real edge indices along an Euler trail from the virtual start."""
    cursor: dict[Vertex, int] = defaultdict(int)
    stack: list[tuple[Vertex, int]] = [(_START, -3)]
    trail: list[int] = []
    while stack:
        vertex, _ = stack[-1]
        out = adjacency.get(vertex, [])
        if cursor[vertex] < len(out):
            stack.append(out[cursor[vertex]])
            cursor[vertex] += 1
        else:
            trail.append(stack.pop()[1])
    trail.reverse()
    return [index for index in trail if index >= 0]


def _exhaustive(
    edges: Sequence[Edge], start: int | None, ends: Sequence[int] | None, tolerance: int
) -> tuple[int, set[tuple[BreakPair, ...]], tuple[int, ...]]:
    """Fewest breaks over every order, the distinct break multisets reaching it, and one order.

    Dynamic programming over (entries used, last entry): the future cost only depends on the last
    balance and what is left, so keeping the cheapest partial results per state is exact.
    """
    n = len(edges)
    befores = [b for b, _ in edges]
    afters = [a for _, a in edges]
    State = tuple[int, set[tuple[BreakPair, ...]], tuple[int, ...]]
    table: list[dict[int, State]] = [{} for _ in range(1 << n)]
    for i in range(n):
        if start is not None and abs(start - befores[i]) > tolerance:
            table[1 << i][i] = (1, {((start, befores[i]),)}, (i,))
        else:
            table[1 << i][i] = (0, {()}, (i,))
    for mask in range(1, 1 << n):
        for last, (cost, results, path) in table[mask].items():
            after = afters[last]
            for nxt in range(n):
                if mask >> nxt & 1:
                    continue
                before = befores[nxt]
                if abs(before - after) > tolerance:
                    new_cost = cost + 1
                    new_results = {tuple(sorted((*r, (after, before)))) for r in results}
                else:
                    new_cost, new_results = cost, results
                slot = table[mask | 1 << nxt]
                current = slot.get(nxt)
                if current is None or new_cost < current[0]:
                    slot[nxt] = (new_cost, set(new_results), (*path, nxt))
                elif new_cost == current[0]:
                    current[1].update(new_results)
    best_cost = -1
    best_results: set[tuple[BreakPair, ...]] = set()
    best_order: tuple[int, ...] = ()
    for last, (cost, results, path) in table[(1 << n) - 1].items():
        after = afters[last]
        for end in ends or [None]:
            if end is not None and abs(end - after) > tolerance:
                total = cost + 1
                finished = {tuple(sorted((*r, (after, end)))) for r in results}
            else:
                total, finished = cost, results
            if best_cost < 0 or total < best_cost:
                best_cost, best_results, best_order = total, set(finished), path
            elif total == best_cost:
                best_results.update(finished)
    return best_cost, best_results, best_order
