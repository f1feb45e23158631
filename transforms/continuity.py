"""Continuity of the balance chain: each entry must start where the previous one ended.

balance_before = balance_after - signed_amount must equal the balance_after of the entry before it
(per account). A difference is a movement the API did not show, which is exactly what the API
promises never to hide.

Speed comes from doing almost everything in one vectorized pass over Int64 micro-credits: sort by
(account, createdAt, balances descending), compare with the previous row, and only send the tie
groups that touch a candidate break to the per-group search (`tie_groups`, which hands each run of
groups to `tie_order`). Sorting by balances descending already chains the common tie (concurrent
usage entries, all debits).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

import polars as pl

from transforms.breaks import conform_breaks, continuity_detail, empty_breaks
from transforms.entry_type import DEFAULT_RULES, EntryTypeRules
from transforms.micros import MONEY, decimal_to_micros, from_micros, to_micros
from transforms.normalize import SignConvention, with_signed_amount
from transforms.tie_groups import groups_touching_candidates, search_groups

_MAX_PASSES = 4
# Entry ids only break ties between identical balances, so their hash (deterministic) will do.
_SORT_KEYS = ["__account", "__at", "__before", "__after", "__id"]
_SORT_DESCENDING = [False, False, True, True, False]
_MOVABLE = ["__row", "__before", "__after"]


@dataclass(frozen=True)
class Reconciliation:
    """The ledger in chain order and the continuity breaks found in it.

    `ordered` has the input columns plus `signed_amount` and `balance_before` (Decimal(18,6)) and
    `chain_position` (Int64, 1-based per account), sorted by account and chain position.
    `breaks` has the `balance_breaks` schema (kind 'continuity'). `searched_groups` counts the tie
    groups that needed the per-group search, `ambiguous_groups` those whose breaks the balances
    do not determine.
    """

    ordered: pl.DataFrame
    breaks: pl.DataFrame
    tolerance: Decimal
    convention: SignConvention
    searched_groups: int
    ambiguous_groups: int
    ambiguous_days: dict[date, int] = field(default_factory=dict)


def reconcile_continuity(
    ledger: pl.DataFrame,
    *,
    convention: SignConvention = "signed",
    tolerance: Decimal = Decimal(0),
    rules: EntryTypeRules = DEFAULT_RULES,
    exhaustive_limit: int = 8,
) -> Reconciliation:
    """Orders the ledger into its balance chain and reports every continuity break.

    `tolerance` (Decimal, default zero) is the largest difference that is not a break, as in
    Beancount's balance assertions. Entries sharing a createdAt are ordered by their balances; the
    row order of `ledger` never changes the result.
    """
    signed, chain, searched, ambiguous = _chain(
        ledger, convention, tolerance, rules, exhaustive_limit
    )
    breaks = _continuity_breaks(signed, chain, ambiguous)
    ambiguous_days = _days_of_groups(chain, ambiguous)
    placement = _placement(chain)
    del chain  # the ordered ledger is the largest frame made here: free the chain first
    ordered = _ordered(signed, placement)
    return Reconciliation(
        ordered=ordered,
        breaks=breaks,
        tolerance=Decimal(tolerance),
        convention=convention,
        searched_groups=len(searched),
        ambiguous_groups=len(ambiguous),
        ambiguous_days=ambiguous_days,
    )


def reconcile_each_account(
    ledger: pl.DataFrame,
    *,
    convention: SignConvention = "signed",
    tolerance: Decimal = Decimal(0),
    rules: EntryTypeRules = DEFAULT_RULES,
    exhaustive_limit: int = 8,
) -> dict[str, Reconciliation]:
    """``reconcile_continuity`` of each account of `ledger`, in one pass over all of them.

    Every step of the pass already keeps accounts apart (the chain is sorted by account first, a
    tie group never spans two, a candidate break needs the same account on both sides), so each
    account's result is the one it would get alone; what a lone pass counts for the whole
    ledger (the searched and ambiguous tie groups, the ambiguous days) is counted per account
    here. One pass instead of one per account: an agency's daily tails are hundreds of small
    frames, where polars' fixed cost per call, not the rows, was the time.
    """
    signed, chain, searched, ambiguous = _chain(
        ledger, convention, tolerance, rules, exhaustive_limit
    )
    breaks = _continuity_breaks(signed, chain, ambiguous)
    placement = _placement(chain)
    names = signed["account"]
    group_accounts = dict(
        chain.select("__group", account=names.gather(chain["__row"])).unique("__group").iter_rows()
    )
    ordered = _ordered(signed, placement)
    searched_of: dict[str, int] = {}
    for group in searched:
        searched_of[group_accounts[group]] = searched_of.get(group_accounts[group], 0) + 1
    ambiguous_of: dict[str, set[int]] = {}
    for group in ambiguous:
        ambiguous_of.setdefault(group_accounts[group], set()).add(group)
    breaks_of = _by_account(breaks)
    results = {}
    for account, own in _by_account(ordered).items():
        groups = ambiguous_of.get(account, set())
        results[account] = Reconciliation(
            ordered=own,
            breaks=breaks_of.get(account, breaks.clear()),
            tolerance=Decimal(tolerance),
            convention=convention,
            searched_groups=searched_of.get(account, 0),
            ambiguous_groups=len(groups),
            ambiguous_days=_days_of_groups(chain, groups),
        )
    return results


def _ordered(signed: pl.DataFrame, placement: pl.DataFrame) -> pl.DataFrame:
    """The ledger in chain order, with its balance_before and chain_position."""
    return signed[placement["__row"]].with_columns(
        placement["balance_before"], placement["chain_position"]
    )


def _by_account(frame: pl.DataFrame) -> dict[str, pl.DataFrame]:
    return {
        key[0]: part
        for key, part in frame.partition_by("account", as_dict=True, maintain_order=True).items()
    }


def _chain(
    ledger: pl.DataFrame,
    convention: SignConvention,
    tolerance: Decimal,
    rules: EntryTypeRules,
    exhaustive_limit: int,
) -> tuple[pl.DataFrame, pl.DataFrame, set[int], set[int]]:
    """The signed ledger, its chain in order (accounts by name), the tie groups searched and
    those left ambiguous."""
    tol = decimal_to_micros(Decimal(tolerance))
    if tol < 0:
        raise ValueError("tolerance must not be negative")
    signed = with_signed_amount(ledger, convention, rules).with_columns(
        balance_after=pl.col("balance_after").cast(MONEY)
    )
    # The chain holds integers only: sorting and permuting strings is what costs at 10M rows.
    account_keys, account_names = _account_keys(signed["account"])
    chain = (
        signed.select(
            __account=account_keys,
            __at=pl.col("created_at").dt.epoch("us"),
            __row=pl.int_range(pl.len(), dtype=pl.Int64),
            __after=to_micros(pl.col("balance_after")),
            __before=to_micros(pl.col("balance_after")) - to_micros(pl.col("signed_amount")),
            __id=pl.col("entry_id").hash(),
        )
        .sort(_SORT_KEYS, descending=_SORT_DESCENDING)
        .drop("__id")
        .with_columns(_group_columns())
    )
    swaps = _pair_swaps(chain.with_columns(_candidate_column(tol)), tol)
    if swaps is not None:
        chain = chain.with_columns(pl.col(_MOVABLE).gather(swaps))
    searched: set[int] = set()
    ambiguous: set[int] = set()
    # A reordered group may end elsewhere and expose its neighbour, hence a few passes.
    for _ in range(_MAX_PASSES):
        chain = chain.with_columns(_candidate_column(tol))
        pending = groups_touching_candidates(chain) - searched
        if not pending:
            break
        order = search_groups(chain, pending, tol, exhaustive_limit, ambiguous)
        searched |= pending  # search_groups added the groups it decided along with them
        # Rows only move within their group, so the group columns stay where they are.
        chain = chain.with_columns(pl.col(_MOVABLE).gather(order))
    else:
        chain = chain.with_columns(_candidate_column(tol))
    return signed, _accounts_by_name(chain, account_names), searched, ambiguous


def _days_of_groups(chain: pl.DataFrame, groups: set[int]) -> dict[date, int]:
    """How many of `groups` fall on each UTC day (the day of the group's createdAt)."""
    if not groups:
        return {}
    flagged = pl.Series(sorted(groups), dtype=chain["__group"].dtype).implode()
    days = (
        chain.filter(pl.col("__group").is_in(flagged))
        .group_by("__group")
        .agg(pl.col("__at").first())
        .group_by(day=pl.from_epoch(pl.col("__at"), time_unit="us").dt.date())
        .agg(pl.len())
    )
    return {day: int(n) for day, n in days.iter_rows()}


def _account_keys(accounts: pl.Series) -> tuple[pl.Series, dict[int, str]]:
    """A UInt64 key per row that groups accounts, and the name of each key.

    The key is the name's hash (cheap), unless two of the names present collide, in which case
    it is the name's dense rank (exact, slower).
    """
    names = accounts.unique().drop_nulls()
    name_hashes = names.hash()
    if name_hashes.n_unique() == names.len():
        return accounts.hash(), dict(zip(name_hashes.to_list(), names.to_list(), strict=True))
    ranks = accounts.rank("dense").cast(pl.UInt64)
    pairs = pl.DataFrame({"key": ranks, "name": accounts}).unique("key")
    return ranks, dict(zip(pairs["key"].to_list(), pairs["name"].to_list(), strict=True))


def _pair_swaps(chain: pl.DataFrame, tol: int) -> pl.Series | None:
    """Row permutation that swaps two-entry tie groups whose other order is continuous.

    Most tie groups are pairs between one-entry groups; when the balance-descending sort got a
    pair wrong (a usage and a refund in one millisecond) and the swapped pair fits both its
    neighbours exactly, the swap is the only fewest-break order, so it is done here, vectorized,
    and the pair never reaches the per-group search. Only pairs next to a candidate break are
    looked at (None when there is nothing to swap).
    """
    height = chain.height
    candidates = chain.select(pl.arg_where(pl.col("__break"))).to_series().cast(pl.Int64)
    if candidates.len() == 0:
        return None
    starts = pl.concat([candidates - 2, candidates - 1, candidates]).unique().sort()
    starts = starts.filter((starts >= 0) & (starts + 1 < height))

    def at(column: str, offset: int) -> pl.Series:
        """`column` at start + offset, null outside the chain."""
        index = starts + offset
        inside = (index >= 0) & (index < height)
        values = chain[column].gather(index.clip(0, height - 1))
        return pl.select(pl.when(inside).then(values)).to_series()

    def breaks(x: pl.Series, y: pl.Series) -> pl.Series:
        return pl.select(((x - y).abs() > tol).fill_null(False).cast(pl.Int8)).to_series()

    same = {offset: at("__same_group", offset).fill_null(False) for offset in (-1, 0, 1, 2, 3)}
    # The groups either side must be of one entry; another account's rows there are outside
    # the chain, as they are when the account is reconciled alone.
    first_of_account = ~at("__same_account", 0).fill_null(False)
    next_account = ~at("__same_account", 2).fill_null(False)
    shape = (
        ~same[0] & same[1] & ~same[2] & (~same[-1] | first_of_account) & (~same[3] | next_account)
    )
    previous = pl.select(
        pl.when(at("__same_account", 0).fill_null(False)).then(at("__after", -1))
    ).to_series()
    following = pl.select(
        pl.when(at("__same_account", 2).fill_null(False)).then(at("__before", 2))
    ).to_series()
    first_before, first_after = at("__before", 0), at("__after", 0)
    second_before, second_after = at("__before", 1), at("__after", 1)
    as_is = (
        breaks(first_before, previous)
        + breaks(second_before, first_after)
        + breaks(following, second_after)
    )
    swapped = (
        breaks(second_before, previous)
        + breaks(first_before, second_after)
        + breaks(following, first_after)
    )
    chosen = starts.filter(shape & (as_is > 0) & (swapped == 0))
    if chosen.len() == 0:
        return None
    permutation = pl.int_range(height, dtype=pl.Int64, eager=True)
    return permutation.scatter(pl.concat([chosen, chosen + 1]), pl.concat([chosen + 1, chosen]))


def _accounts_by_name(chain: pl.DataFrame, names: dict[int, str]) -> pl.DataFrame:
    """The chain with its account blocks in name order (they are in key order until here)."""
    starts = chain.with_row_index("__position").filter(~pl.col("__same_account"))
    keys, positions = starts["__account"].to_list(), starts["__position"].to_list()

    def name(key: int) -> str:
        return names.get(key, "")  # a null account sorts first

    if keys == sorted(keys, key=name):
        return chain
    ends = [*positions[1:], chain.height]
    blocks = sorted(zip(keys, positions, ends, strict=True), key=lambda b: name(b[0]))
    return pl.concat([chain.slice(start, end - start) for _, start, end in blocks])


def _group_columns() -> list[pl.Expr]:
    """Tie-group id (consecutive rows of one account and createdAt) and whether it has 2+ rows."""
    same_account = pl.col("__account") == pl.col("__account").shift(1)
    same_group = same_account & (pl.col("__at") == pl.col("__at").shift(1))
    return [
        same_account.fill_null(False).alias("__same_account"),
        (~same_group.fill_null(False)).cum_sum().alias("__group"),
        same_group.fill_null(False).alias("__same_group"),
    ]


def _candidate_column(tol: int) -> pl.Expr:
    gap = pl.col("__before") - pl.col("__after").shift(1)
    return (pl.col("__same_account") & (gap.abs() > tol)).fill_null(False).alias("__break")


def _placement(chain: pl.DataFrame) -> pl.DataFrame:
    """Where each input row goes (`__row` in chain order), its balance_before and position."""
    start_of_account = pl.when(~pl.col("__same_account")).then(pl.int_range(pl.len()))
    return chain.select(
        "__row",
        balance_before=from_micros(pl.col("__before")),
        chain_position=(pl.int_range(pl.len()) - start_of_account.forward_fill() + 1).cast(
            pl.Int64
        ),
    )


def _continuity_breaks(
    signed: pl.DataFrame, chain: pl.DataFrame, ambiguous: set[int]
) -> pl.DataFrame:
    if not chain.height:
        return empty_breaks()
    flagged = pl.Series(sorted(ambiguous), dtype=chain["__group"].dtype).implode()
    rows = chain.select(
        "__break",
        before_row=pl.col("__row").shift(1),
        after_row=pl.col("__row"),
        expected=pl.col("__after").shift(1),
        observed=pl.col("__before"),
        ambiguous=pl.col("__group").is_in(flagged) | pl.col("__group").shift(1).is_in(flagged),
    ).filter(pl.col("__break"))
    entries = signed.select("account", "entry_id", "created_at")
    before = entries[rows["before_row"]]
    after = entries[rows["after_row"]]
    found = pl.DataFrame(
        {
            "account": after["account"],
            "kind": pl.Series(["continuity"] * rows.height, dtype=pl.Utf8),
            "break_start": before["created_at"],
            "break_end": after["created_at"],
            "before_entry_id": before["entry_id"],
            "after_entry_id": after["entry_id"],
            "ambiguous": rows["ambiguous"],
        }
    ).with_columns(
        rows.select(
            expected_balance=from_micros(pl.col("expected")),
            observed_balance=from_micros(pl.col("observed")),
            gap=from_micros(pl.col("observed") - pl.col("expected")),
        )
    )
    found = found.sort("account", "break_end", "after_entry_id")
    return conform_breaks(found.with_columns(detail=continuity_detail()))
