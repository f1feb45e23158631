"""Fewest-break orders of a multigraph of balances: the Euler-trail construction.

Each entry is an edge balance_before -> balance_after. An order of edges is a walk that "jumps"
wherever an entry does not start at the balance the previous one left; a jump is a break. Given a
start balance and an end balance, the fewest jumps come from the classic construction: add jump
edges from surplus-in to surplus-out balances so that the graph, plus a virtual edge into the
start and out of the end, has an Euler trail, chaining the weakly connected components so that
the trail exists; then walk it with Hierholzer's algorithm. Integer micro-credits, plain Python.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence

Edge = tuple[int, int]
BreakPair = tuple[int, int]
Vertex = int | str

_START = "virtual-start"
_END = "virtual-end"
MAX_FREE_CANDIDATES = 16


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


def free_starts(edges: Sequence[Edge]) -> list[int]:
    """Where an unanchored group may start: surplus balances first, then every other balance.

    Any balance may be the best start (a disconnected cycle costs one break less at the very
    start), so all are tried, up to a cap that only very large first groups reach.
    """
    excess = _excess(edges)
    surplus = sorted(v for v, e in excess.items() if e > 0)
    rest = sorted({b for b, _ in edges} - set(surplus))
    return (surplus + rest)[:MAX_FREE_CANDIDATES]


def free_ends(edges: Sequence[Edge]) -> list[int]:
    excess = _excess(edges)
    deficit = sorted(v for v, e in excess.items() if e < 0)
    rest = sorted({a for _, a in edges} - set(deficit))
    return (deficit + rest)[:MAX_FREE_CANDIDATES]


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


def fewest_jump_order(edges: Sequence[Edge], start: int, end: int) -> list[int]:
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
