"""The tie groups the chain pass cannot settle alone, and the search that orders them.

`continuity` sorts the whole chain at once; only the tie groups (entries of one account sharing
a createdAt) next to a candidate break come here, a few rows each, for `tie_order` to decide.
This module reads the chain frame `continuity` builds, one row per entry in chain order:
`__account` (UInt64 key), `__row` (input row), `__before`/`__after` (Int64 micro-credits),
`__same_account`, `__group` (tie-group id), `__same_group` and `__break` (a candidate break
before the row). The search answers with a row permutation that never moves a row out of its
group, so the group columns stay valid.
"""

from __future__ import annotations

import polars as pl

from transforms.tie_order import resolve_cluster


def groups_touching_candidates(chain: pl.DataFrame) -> set[int]:
    """Tie groups (2+ rows) containing a candidate break or the entry just before one.

    An account's first group has no balance to start from, so it may have several continuous
    orders ending at different balances; the same holds for a run of tie groups opening the
    account. A break right after such a run may disappear with another order of the run, so the
    whole run joins the search.
    """
    in_tie = pl.col("__same_group") | pl.col("__same_group").shift(-1).fill_null(False)
    marked = chain.select(
        "__account",
        __group=pl.col("__group"),
        __prev_group=pl.col("__group").shift(1),
        __tie=in_tie,
        __prev_tie=in_tie.shift(1).fill_null(False),
        __break=pl.col("__break"),
    ).filter(pl.col("__break"))
    if marked.height == 0:
        return set()
    here = marked.filter(pl.col("__tie")).select("__account", "__group")
    before = marked.filter(pl.col("__prev_tie")).select("__account", __group="__prev_group")
    seeds = pl.concat([here, before]).unique()
    if seeds.height == 0:
        return set()
    starts = chain.with_row_index("__position").filter(~pl.col("__same_account"))
    firsts = dict(zip(starts["__account"], starts["__group"], strict=True))
    first_rows = dict(zip(starts["__account"], starts["__position"], strict=True))
    last_seed = dict(seeds.group_by("__account").agg(pl.col("__group").max()).iter_rows())
    run_end = {
        account: _first_single_group(chain, first_rows[account], limit)
        for account, limit in last_seed.items()
    }
    groups: set[int] = set()
    for account, group in seeds.iter_rows():
        groups.add(group)
        if group < run_end[account]:
            groups.update(range(firsts[account], group))
    return groups


def _first_single_group(chain: pl.DataFrame, first_row: int, limit: int) -> int:
    """Group id of the first one-entry group from `first_row` on (> `limit` when none up to it).

    Looks at a short head first: accounts rarely open with more than a few tie groups.
    """
    length = 64
    while True:
        head = chain.slice(first_row, length).select(
            "__group",
            "__account",
            __single=~pl.col("__same_group") & ~pl.col("__same_group").shift(-1).fill_null(False),
        )
        head = head.filter(pl.col("__account") == head["__account"][0])
        singles = head.filter(pl.col("__single"))
        # The last row of a slice may continue into the next one: it proves nothing alone.
        proven = singles.filter(pl.col("__group") < head["__group"][-1])
        if proven.height:
            return int(proven["__group"][0])
        if head["__group"][-1] > limit or first_row + length >= chain.height:
            return int(singles["__group"][0]) if singles.height else limit + 1
        if head.height < length:  # the account ended inside the head
            return int(singles["__group"][0]) if singles.height else limit + 1
        length *= 8


def search_groups(
    chain: pl.DataFrame, pending: set[int], tol: int, exhaustive_limit: int, ambiguous: set[int]
) -> pl.Series:
    """Runs the tie search on `pending` groups; returns the row permutation that applies it."""
    groups = _GroupRows(chain)
    groups.fetch({g + d for g in pending for d in (-1, 0, 1)})
    searched = _with_balanced_followers(groups, pending)
    slots: list[int] = []
    sources: list[int] = []
    for cluster in _clusters(searched, groups.accounts):
        first, last = cluster[0], cluster[-1]
        account = groups.accounts[first]
        start = groups.edges[first - 1][-1][1] if groups.account(first - 1) == account else None
        end = groups.edges[last + 1][0][0] if groups.account(last + 1) == account else None
        resolution = resolve_cluster(
            [groups.edges[g] for g in cluster], start, end, tol, exhaustive_limit
        )
        if resolution.ambiguous:
            ambiguous.update(cluster)
        for group, order in zip(cluster, resolution.orders, strict=True):
            group_positions = groups.positions[group]
            slots.extend(group_positions)
            sources.extend(group_positions[i] for i in order)
    pending |= searched
    permutation = pl.int_range(chain.height, dtype=pl.Int64, eager=True)
    if slots:
        permutation = permutation.scatter(slots, sources)
    return permutation


class _GroupRows:
    """Rows of a few groups pulled out of the chain, fetched by group id on demand."""

    def __init__(self, chain: pl.DataFrame) -> None:
        self.chain = chain
        self.positions: dict[int, list[int]] = {}
        self.edges: dict[int, list[tuple[int, int]]] = {}
        self.accounts: dict[int, int] = {}
        self.fetched: set[int] = set()

    def fetch(self, groups: set[int]) -> None:
        wanted = sorted(groups - self.fetched)
        if not wanted:
            return
        self.fetched.update(wanted)
        rows = (
            self.chain.with_row_index("__position")
            .filter(pl.col("__group").cast(pl.Int64).is_in(pl.Series(wanted).implode()))
            .select("__position", "__group", "__account", "__before", "__after")
        )
        grouped = rows.group_by("__group").agg(
            "__position", "__before", "__after", pl.col("__account").first()
        )
        columns = [grouped[name].to_list() for name in grouped.columns]
        for group, positions, befores, afters, account in zip(*columns, strict=True):
            self.positions[group] = positions
            self.edges[group] = list(zip(befores, afters, strict=True))
            self.accounts[group] = account

    def account(self, group: int) -> int | None:
        return self.accounts.get(group)


def _with_balanced_followers(groups: _GroupRows, pending: set[int]) -> set[int]:
    """`pending` plus the tie groups of zero net amount that follow it.

    A tie group whose entries net to zero (a debit and its refund in one millisecond) is a
    circuit: it can be walked from any of its balances, so where it starts depends on the group
    before it and it must be decided with that group, as must whatever follows it.
    """
    searched = set(pending)
    frontier = {g + 1 for g in pending} - searched
    while frontier:
        groups.fetch(frontier | {g + 1 for g in frontier})
        following: set[int] = set()
        for group in sorted(frontier):
            edges = groups.edges.get(group, [])
            if (
                len(edges) > 1
                and groups.account(group) == groups.account(group - 1)
                and sum(after - before for before, after in edges) == 0
            ):
                searched.add(group)
                following.add(group + 1)
        frontier = following - searched
    return searched


def _clusters(pending: set[int], accounts: dict[int, int]) -> list[list[int]]:
    """Runs of consecutive pending groups of one account: their orders depend on each other."""
    clusters: list[list[int]] = []
    for group in sorted(pending):
        previous = clusters[-1][-1] if clusters else None
        if previous == group - 1 and accounts[previous] == accounts[group]:
            clusters[-1].append(group)
        else:
            clusters.append([group])
    return clusters
