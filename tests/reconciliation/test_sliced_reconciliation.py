"""Reconciling in slices gives exactly the whole-ledger run: same breaks, statements, enriched
ledger, run row and result, on real DuckDB warehouses, for slice sizes from one entry up.

Ledgers here span several UTC days with tie groups (at day ends too, where a slice cannot end),
identical entries, hidden movements right at day boundaries, both sign conventions and "infer".
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.reconciliation.run import ReconcileOptions, ReconciliationResult, reconcile_account
from pipelines.reconciliation.slices import LedgerDay, ledger_days, plan_slices
from pipelines.warehouse.writer import Warehouse
from tests.reconciliation.warehouse_ledgers import (
    FETCHED_AT,
    breakdown_doc,
    derived_tables,
    land_ledger,
    land_snapshots,
    snapshot_rows,
    summary_doc,
)
from tests.transforms.ledger_strategies import (
    AGENTS,
    CAMPAIGNS,
    CHANNELS,
    CREDIT_TYPES,
    DEBIT_TYPES,
)
from tests.transforms.ledgers import MICRO, T0, Chain, ledger_frame, money, unsigned
from transforms.aggregate import daily_balance
from transforms.continuity import reconcile_continuity
from transforms.cross_checks import (
    LedgerDebits,
    compare_breakdown,
    compare_summary,
    ledger_debits,
    ledger_end,
    read_breakdown,
    read_summary,
)
from transforms.normalize import choose_sign_convention, sign_pair_counts
from transforms.opening import compare_opening, ledger_start

# 12 examples each: the whole suite has five minutes on 2 cores, and these are its heaviest.
SOME = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
RUN_IDS = (f"run-{n}" for n in itertools.count())
SERIAL = itertools.count()
INSTANTS = [
    timedelta(0),  # midnight: the first instant a slice's range predicate takes
    timedelta(seconds=1),
    timedelta(minutes=7),
    timedelta(hours=12),
    timedelta(hours=23, minutes=59, seconds=59, microseconds=999_999),  # the last one
]
PERIOD = (T0 + timedelta(days=1), T0 + timedelta(days=3))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    """One file for the module: each example reconciles an account of its own."""
    path = Path(tmp_path_factory.mktemp("sliced")) / "warehouse.duckdb"
    wh = Warehouse(path, lock_timeout_s=60)
    wh.ensure()
    yield wh


@dataclasses.dataclass(frozen=True)
class Case:
    chain: Chain
    day_starts: list[int]
    data_unsigned: bool
    options: ReconcileOptions
    summary_delta: Decimal | None
    items: list[tuple[str | None, str | None, str | None, Decimal]]
    with_breakdown: bool
    with_plans: bool


@st.composite
def day_chains(draw: st.DrawFn, account: str) -> tuple[Chain, list[int]]:
    """Several days of tie groups; amounts either tiny (balances coincide, identical entries,
    ambiguous ties) or distinct powers of two (every break determined)."""
    offsets: list[timedelta] = []
    day_starts: list[int] = []
    for day in range(draw(st.integers(1, 4))):
        day_starts.append(len(offsets))
        instants = draw(st.lists(st.sampled_from(INSTANTS), min_size=1, max_size=3, unique=True))
        for instant in sorted(instants):
            size = draw(st.sampled_from([1, 1, 2, 3]))
            offsets.extend([timedelta(days=day) + instant] * size)
    n = len(offsets)
    tiny = draw(st.booleans())
    bits = n + 8
    if tiny:
        amounts = money(*draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n)))
        types = ["Usage" if a < 0 else "TopUp" for a in amounts]
    else:
        signs = draw(st.lists(st.sampled_from([-1, -1, 1]), min_size=n, max_size=n))
        # Up to 36 entries of 100 * 2**44 micro-credits keep every balance within the 11 integer
        # digits a ledger entry may have, so the landing accepts them all.
        bases = draw(st.lists(st.integers(0, 100), min_size=n, max_size=n))
        amounts = [
            Decimal(sign * (base * 2**bits + 2**i)) * MICRO
            for i, (sign, base) in enumerate(zip(signs, bases, strict=True))
        ]
        types = [draw(st.sampled_from(DEBIT_TYPES if a < 0 else CREDIT_TYPES)) for a in amounts]
    dimensions = [
        (
            draw(st.sampled_from(AGENTS)),
            draw(st.sampled_from(CAMPAIGNS)),
            draw(st.sampled_from(CHANNELS)),
        )
        if t in ("Usage", "Refund")
        else (None, None, None)
        for t in types
    ]
    # Gaps at day starts first: a slice can only start there, so those are the boundary cases.
    boundaries = day_starts[1:]
    positions = (
        set(draw(st.lists(st.sampled_from(boundaries), max_size=2))) if boundaries else set()
    )
    if n > 1:
        positions |= set(draw(st.lists(st.integers(1, n - 1), max_size=2)))
    gaps = {}
    for k, position in enumerate(sorted(positions)):
        sign = draw(st.sampled_from([-1, 1]))
        if tiny:
            gaps[position] = Decimal(sign * draw(st.integers(1, 2)))
        else:
            gaps[position] = (
                Decimal(sign * (draw(st.integers(0, 9)) * 2**bits + 2 ** (n + k))) * MICRO
            )
    chain = Chain(
        amounts=amounts,
        offsets=offsets,
        opening=Decimal(draw(st.integers(0, 100))),
        account=account,
        gaps=gaps,
        types=types,
        dimensions=dimensions,
    )
    return chain, day_starts


@st.composite
def cases(draw: st.DrawFn) -> Case:
    chain, day_starts = draw(day_chains("acme"))
    options = ReconcileOptions(
        sign_convention=draw(st.sampled_from(["signed", "unsigned", "infer"])),
        tolerance=draw(st.sampled_from([Decimal(0), Decimal(0), Decimal(1)])),
        slice_entries=None,
    )
    keys = list(itertools.product(AGENTS, CAMPAIGNS, CHANNELS))
    chosen = draw(st.lists(st.sampled_from(keys), max_size=4, unique=True))
    items = [(*key, Decimal(draw(st.integers(0, 5)))) for key in chosen]
    return Case(
        chain=chain,
        day_starts=day_starts,
        data_unsigned=draw(st.booleans()),
        options=options,
        summary_delta=draw(st.sampled_from([None, Decimal(0), Decimal("0.5")])),
        items=items,
        with_breakdown=draw(st.booleans()),
        with_plans=draw(st.booleans()),
    )


@dataclasses.dataclass(frozen=True)
class Landed:
    """A case's ledger as it landed (the landing's entry ids), under an account of its own."""

    account: str
    chain: Chain
    ledger: pl.DataFrame


def _land(warehouse: Warehouse, case: Case) -> Landed:
    """Lands the case under a fresh account: examples share the module's file, and a snapshot
    history only grows, so reusing a name would show one example another's snapshots."""
    chain = dataclasses.replace(case.chain, account=f"{case.chain.account}-{next(SERIAL)}")
    ledger = ledger_frame(chain)
    if case.data_unsigned:
        ledger = unsigned(ledger)
    ids = land_ledger(warehouse, ledger)
    balance = _summary_balance(chain, case)
    land_snapshots(
        warehouse,
        chain.account,
        balance=balance,
        period=PERIOD if case.with_breakdown else None,
        items=case.items,
        plans=[(T0 + timedelta(days=1, hours=1), "Starter"), (T0 + timedelta(days=2), "Growth")]
        if case.with_plans
        else [],
        campaigns=[("cmp_x", "Spring"), ("cmp_y", "Autumn")],
    )
    return Landed(chain.account, chain, ledger.with_columns(entry_id=pl.Series(ids)))


def _summary_balance(chain: Chain, case: Case) -> Decimal | None:
    closing = chain.rows()[-1]["balance_after"]
    return None if case.summary_delta is None else closing + case.summary_delta  # type: ignore[operator]


def assert_same_result(found: ReconciliationResult, expected: ReconciliationResult) -> None:
    for name in ("account", "entries", "convention", "inferred", "tolerance", "ambiguous_ties"):
        assert getattr(found, name) == getattr(expected, name), name
    assert found.breaks.equals(expected.breaks)
    for check in ("summary", "breakdown"):
        a, b = getattr(found, check), getattr(expected, check)
        assert (a.status, a.message, a.tolerance) == (b.status, b.message, b.tolerance), check
        assert a.breaks.equals(b.breaks), check


def _slices_reproduce(
    warehouse: Warehouse,
    case: Case,
    account: str,
    whole: ReconciliationResult,
    expected: dict[str, list[Any]],
) -> None:
    """Slices of one entry and of four give the whole-ledger run's derived rows and result."""
    assert expected["reconciliation_runs"], "the run row is written"
    for size in (1, 4):
        options = dataclasses.replace(case.options, slice_entries=size)
        run_id = next(RUN_IDS)
        sliced = reconcile_account(warehouse, account, options, run_id)
        assert derived_tables(warehouse, account, run_id) == expected, size
        assert_same_result(sliced, whole)


# One test for both properties of a drawn case: the whole-ledger run is the frame transforms,
# and slices of one entry and of four reproduce it. Two tests landed and reconciled the same
# kind of case twice (the landing and the whole run were most of an example); one whole run now
# serves both, each property still checked on every example.
@SOME
@given(case=cases())
def test_the_whole_ledger_run_is_the_frame_transforms_and_slices_reproduce_it(
    warehouse: Warehouse, case: Case
) -> None:
    """The orchestration adds nothing to the rules: one slice equals the transforms on frames,
    and more slices equal one.

    The frames are the landed ledger and the snapshots' landed rows; the rules are composed as
    reconciliation composes them.
    """
    landed = _land(warehouse, case)
    account, options, run_id, ledger = landed.account, case.options, next(RUN_IDS), landed.ledger
    result = reconcile_account(warehouse, account, options, run_id)
    rules = options.rules()
    convention = options.sign_convention
    if convention == "infer":
        convention = choose_sign_convention(sign_pair_counts(ledger, rules)).convention
    rec = reconcile_continuity(
        ledger,
        convention=convention,  # type: ignore[arg-type]
        tolerance=options.tolerance,
        rules=rules,
    )
    ordered = rec.ordered
    balance = _summary_balance(landed.chain, case)
    summary_rows = (
        []
        if balance is None
        else snapshot_rows("consumption_snapshots", summary_doc(balance), account).rows
    )
    breakdown_rows = (
        snapshot_rows("breakdown_snapshots", breakdown_doc(PERIOD, case.items), account).rows
        if case.with_breakdown
        else []
    )
    summary = compare_summary(
        ledger_end(ordered, account), read_summary(summary_rows), tolerance=options.tolerance
    )
    reported = read_breakdown(breakdown_rows)
    debits = (
        reported
        if isinstance(reported, str)
        else LedgerDebits(account, ledger_debits(ordered, reported.start, reported.end, rules))
    )
    breakdown = compare_breakdown(reported, debits, tolerance=options.tolerance)
    opening = compare_opening(
        ledger_start(ordered.row(0, named=True)) if ordered.height else "none",
        None,
        tolerance=options.tolerance,
    )
    parts = [opening.breaks, rec.breaks, summary.breaks, breakdown.breaks]
    breaks = pl.concat(parts, how="vertical_relaxed").drop(PLACED)
    assert result.breaks.drop(PLACED).equals(breaks)
    assert (result.convention, result.ambiguous_ties) == (rec.convention, rec.ambiguous_groups)
    assert (result.summary.message, result.breakdown.message) == (
        summary.message,
        breakdown.message,
    )
    tables = derived_tables(warehouse, account, run_id)
    daily = _with_movements_outside_the_chain(
        daily_balance(ordered, rules), opening.breaks, summary.breaks
    )
    assert [row[:10] for row in tables["daily_balance"]] == daily
    enriched = [(r[1], r[2], r[7], r[8]) for r in tables["ledger_enriched"]]
    assert (
        enriched
        == ordered.select(
            "entry_id", pl.col("chain_position") - 1, "signed_amount", "balance_before"
        ).rows()
    )
    _slices_reproduce(warehouse, case, account, result, tables)


PLACED = ["break_id", "placement", "observed_on"]


def _with_movements_outside_the_chain(
    daily: pl.DataFrame, opening: pl.DataFrame, after_last: pl.DataFrame
) -> list[tuple]:
    """The daily statement as the chain gives it, then the movement before the first entry
    opening the first day at zero, and the one after the last entry closing the day the summary
    was fetched on (a day of its own, after the ledger's days, in these ledgers)."""
    rows = [list(r) for r in daily.rows()]
    if opening.height:
        gap = opening["gap"][0]
        rows[0][2] -= gap
        rows[0][8] += gap
    if after_last.height and rows:
        gap, closing = after_last["gap"][0], rows[-1][9]
        day = max(FETCHED_AT.date(), rows[-1][1])
        if day == rows[-1][1]:
            rows[-1][8] += gap
            rows[-1][9] += gap
        else:
            zero = Decimal(0)
            rows.append([rows[-1][0], day, closing, zero, zero, zero, zero, zero, gap,
                         closing + gap])  # fmt: skip
    return [tuple(r) for r in rows]


def _day_chain(account: str, gaps: dict[int, Decimal]) -> Chain:
    """Three days: a tie at the end of day 1 (no slice may end there), one entry on day 2,
    a tie opening day 3."""
    hours = [timedelta(hours=h) for h in (1, 23, 23)]
    offsets = [
        *hours,
        timedelta(days=1, hours=5),
        *[timedelta(days=2)] * 2,
        timedelta(days=2, hours=1),
    ]
    return Chain(
        amounts=money("-1.5", "-2", "10", "-0.25", "-3", "1", "-4"),
        offsets=offsets,
        opening=Decimal(100),
        account=account,
        gaps=gaps,
    )


def test_a_gap_between_two_slices_is_found(warehouse: Warehouse) -> None:
    account = "boundary"
    chain = _day_chain(account, gaps={3: Decimal("0.7"), 4: Decimal("-1.1")})
    ids = land_ledger(warehouse, ledger_frame(chain))
    with warehouse.replacing_for_account(account, ()) as source:
        days = ledger_days(source, account)
    assert [(d.entries, d.closing_ties) for d in days] == [(3, 2), (1, 1), (3, 1)]
    plan = plan_slices(days, 1)
    # Day 1 ends in a tie, so it joins day 2; day 3 is a slice of its own.
    assert [(s.first_day, s.last_day) for s in plan] == [
        (date(2025, 1, 1), date(2025, 1, 2)),
        (date(2025, 1, 3), date(2025, 1, 3)),
    ]
    options = ReconcileOptions(slice_entries=1)
    result = reconcile_account(warehouse, account, options, "sliced")
    found = result.continuity_breaks.select(
        "before_entry_id", "after_entry_id", "expected_balance", "observed_balance", "gap"
    ).rows()
    assert found == [
        (ids[2], ids[3], *chain.true_pair(3), Decimal("0.7")),
        (ids[3], ids[4], *chain.true_pair(4), Decimal("-1.1")),
    ]
    whole = reconcile_account(
        warehouse, account, dataclasses.replace(options, slice_entries=None), "whole"
    )
    assert_same_result(result, whole)
    tables = derived_tables(warehouse, account, "sliced")
    assert tables == derived_tables(warehouse, account, "whole")
    hidden = {row[1]: row[8] for row in tables["daily_balance"]}
    assert hidden == {
        date(2025, 1, 1): Decimal(100),  # the ledger opens at 100 with no entry for it
        date(2025, 1, 2): Decimal("0.7"),
        date(2025, 1, 3): Decimal("-1.1"),  # the gap exactly at the slice boundary
    }


def test_an_account_without_entries_reconciles_to_nothing(warehouse: Warehouse) -> None:
    account = "empty"
    land_snapshots(warehouse, account, balance=Decimal(5), period=PERIOD, items=[])
    for size in (None, 1):
        options = ReconcileOptions(sign_convention="infer", slice_entries=size)
        result = reconcile_account(warehouse, account, options, f"empty-{size}")
        assert result.entries == 0 and result.breaks.height == 0
        assert result.summary.status == result.breakdown.status == "unavailable"
        assert (
            result.summary.message
            == f"No ledger entries for account {account}: nothing to compare with."
        )
        tables = derived_tables(warehouse, account, f"empty-{size}")
        assert tables["ledger_enriched"] == [] and len(tables["reconciliation_runs"]) == 1


def test_slices_are_whole_days_of_bounded_size() -> None:
    days = [
        LedgerDay(date(2025, 1, d), entries, ties)
        for d, entries, ties in [(1, 3, 1), (2, 4, 2), (3, 1, 1), (4, 9, 1), (5, 2, 1), (6, 2, 1)]
    ]
    plan = plan_slices(days, 4)
    assert [(s.first_day.day, s.last_day.day, s.entries) for s in plan] == [
        (1, 1, 3),
        (2, 3, 5),  # day 2 ends in a tie: the slice grows past the limit to day 3
        (4, 4, 9),  # a day bigger than the limit is a slice of its own
        (5, 6, 4),
    ]
    assert plan[1].start == datetime(2025, 1, 2, tzinfo=UTC)
    assert plan[1].end == datetime(2025, 1, 4, tzinfo=UTC)
    assert [(s.first_day.day, s.last_day.day) for s in plan_slices(days, None)] == [(1, 6)]
    assert plan_slices([], 10) == []
    with pytest.raises(ValueError):
        plan_slices(days, 0)


def test_a_failed_reconciliation_leaves_the_previous_results(warehouse: Warehouse) -> None:
    account = "failing"
    land_ledger(warehouse, ledger_frame(_day_chain(account, gaps={})))
    reconcile_account(warehouse, account, ReconcileOptions(), "first")
    before = derived_tables(warehouse, account, "first")
    with (
        pytest.raises(RuntimeError),
        warehouse.replacing_for_account(
            account, ("balance_breaks", "daily_balance", "ledger_chain")
        ) as out,
    ):
        assert (
            out.read("SELECT count(*) AS n FROM daily_balance WHERE account = ?", [account])["n"][0]
            == 0
        )  # deleted inside the transaction...
        raise RuntimeError("a slice failed")
    assert derived_tables(warehouse, account, "first") == before  # ...and restored by the rollback
    assert before["daily_balance"]
