"""An incremental reconciliation gives exactly what a full one gives, and is full when it must be.

Each example reconciles fully, then lands a later sync (new days, an entry landed late a few days
back, hidden movements in the recent days, an acknowledgement of an earlier finding), reconciles
incrementally and compares every derived table, row for row with exact Decimals, and the result,
with a full reconciliation of the same data. The ledgers are the sliced reconciliation's (ties at
day ends, identical entries, movements at day boundaries, both conventions and "infer") and the
simulator's scenarios.
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
from hypothesis import event, given
from hypothesis import strategies as st

from pipelines.reconciliation.run import ReconcileOptions, ReconciliationResult, reconcile_account
from pipelines.warehouse.read import open_read_only
from pipelines.warehouse.writer import SnapshotLanding, Warehouse
from tests.reconciliation.test_sliced_reconciliation import (
    PERIOD,
    SOME,
    Case,
    assert_same_result,
    cases,
)
from tests.reconciliation.warehouse_ledgers import (
    DERIVED_QUERIES,
    land_ledger,
    land_snapshots,
    snapshot_rows,
)
from tests.transforms.ledgers import LEDGER_SCHEMA, T0, Chain, ledger_frame, money, unsigned

SERIAL = itertools.count()
# What derived_tables leaves out: the mismatches, the carried tie days, the findings as the
# views show them (acknowledgements joined).
MORE_QUERIES = {
    "breakdown_mismatches": "SELECT * EXCLUDE (run_id, checked_at) FROM breakdown_mismatches "
    "WHERE account = ? ORDER BY ALL",
    "ambiguous_tie_days": "SELECT * FROM ambiguous_tie_days WHERE account = ? ORDER BY ALL",
    "hidden_movements": "SELECT * EXCLUDE (run_id, checked_at) FROM hidden_movements "
    "WHERE account = ? ORDER BY ALL",
    "monthly_statement": "SELECT * FROM monthly_statement WHERE account = ? ORDER BY ALL",
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    path = Path(tmp_path_factory.mktemp("incremental")) / "warehouse.duckdb"
    wh = Warehouse(path, lock_timeout_s=60)
    wh.ensure()
    yield wh


def everything(warehouse: Warehouse, account: str, run_id: str) -> dict[str, list[Any]]:
    """What `derived_tables` reads and MORE_QUERIES, through one read-only open (an open of
    this schema is tens of milliseconds, and a test compares two of these per pass)."""
    found: dict[str, list[Any]] = {}
    with open_read_only(warehouse.path, lock_timeout_s=60) as con:
        for table, sql in {**DERIVED_QUERIES, **MORE_QUERIES}.items():
            params = [account, run_id] if table == "reconciliation_runs" else [account]
            found[table] = con.execute(sql, params).fetchall()
    return found


def acknowledge_one(warehouse: Warehouse, result: ReconciliationResult) -> None:
    """The first finding acknowledged with its gap, as `creditlens breaks ack` records it."""
    if not result.breaks.height:
        return
    finding = result.breaks.row(0, named=True)
    warehouse.append(
        "break_acknowledgements",
        [
            {
                "account": result.account,
                "break_id": finding["break_id"],
                "action": "ack",
                "gap": finding["gap"],
                "reason": "known",
                "acted_by": "test@host",
                "acted_at": datetime.now(UTC),
            }
        ],
    )


def incremental_equals_full(
    warehouse: Warehouse,
    account: str,
    options: ReconcileOptions,
    later_sync: Any,
) -> ReconciliationResult:
    """Full, the later sync, incremental; then full again on the same data: the same rows."""
    first = reconcile_account(warehouse, account, options, f"first-{account}")
    assert first.pass_kind.startswith("full: ")
    acknowledge_one(warehouse, first)
    later_sync()
    incremental = reconcile_account(warehouse, account, options, f"incremental-{account}")
    found = everything(warehouse, account, f"incremental-{account}")
    full = reconcile_account(warehouse, account, options, f"full-{account}", full=True)
    assert full.pass_kind == "full: requested (--full-reconcile)"
    assert everything(warehouse, account, f"full-{account}") == found, incremental.pass_kind
    assert_same_result(incremental, full)
    assert incremental.acknowledged == full.acknowledged
    return incremental


@SOME
@given(case=cases(), data=st.data())
def test_an_incremental_pass_equals_a_full_one(
    warehouse: Warehouse, case: Case, data: st.DataObject
) -> None:
    chain = with_history(dataclasses.replace(case.chain, account=f"inc-{next(SERIAL)}"))
    ledger = ledger_frame(chain)
    if case.data_unsigned:
        ledger = unsigned(ledger)
    days = sorted(set(ledger["created_at"].dt.date().to_list()))
    # Counted from the end: simplest is a first sync of every day, and a re-sync of the last.
    cut = len(days) - 1 - data.draw(st.integers(0, len(days) - 1), "days the first sync missed")
    # A daily sync looks back a few days: mostly to the last days, sometimes to the first.
    back = cut - data.draw(st.sampled_from([1, 2, 0, cut]).map(lambda k: min(k, cut)))
    day_of = pl.col("created_at").dt.date()
    early = ledger.filter(day_of <= days[cut])
    late = early.filter(day_of >= days[back])
    if late.height and data.draw(st.booleans(), "an entry lands late"):
        early = early.filter(pl.int_range(pl.len()) != data.draw(st.integers(0, early.height - 1)))
    if early.height:
        land_ledger(warehouse, early, first=days[0], last=days[cut], run_id="sync-1")
    land_case_snapshots(warehouse, case, chain)
    recent = ledger.filter(day_of >= days[back])

    def later_sync() -> None:
        land_ledger(warehouse, recent, first=days[back], last=days[-1], run_id="sync-2")

    options = dataclasses.replace(case.options, slice_entries=data.draw(st.sampled_from([None, 2])))
    incremental = incremental_equals_full(warehouse, chain.account, options, later_sync)
    event(incremental.pass_kind.split(" 20")[0])  # --hypothesis-show-statistics: both kinds
    if options.sign_convention == "infer":
        assert incremental.pass_kind.startswith("full: the sign convention is inferred")


def land_case_snapshots(warehouse: Warehouse, case: Case, chain: Chain) -> None:
    """The snapshots a drawn case asks for, for the chain's account."""
    land_snapshots(
        warehouse,
        chain.account,
        balance=None if case.summary_delta is None else chain.rows()[-1]["balance_after"],
        period=PERIOD if case.with_breakdown else None,
        items=case.items,
        plans=[(T0 + timedelta(days=1, hours=1), "Starter")] if case.with_plans else [],
        campaigns=[("cmp_x", "Spring")],
    )


def with_history(chain: Chain) -> Chain:
    """Two days of one entry each before the chain: days a pass can carry from (the drawn
    ledgers are at most four days, often ending in ties, so few would offer a boundary)."""
    usage = ("agt_a", "cmp_x", "Phone")
    return dataclasses.replace(
        chain,
        amounts=[*money("5", "-1"), *chain.amounts],
        offsets=[timedelta(days=-2, hours=12), timedelta(days=-1, hours=3), *chain.offsets],
        gaps={i + 2: gap for i, gap in chain.gaps.items()},
        types=["TopUp", "Usage", *chain.types] if chain.types else None,
        dimensions=[(None, None, None), usage, *chain.dimensions] if chain.dimensions else None,
    )


def _days(account: str, gaps: dict[int, Decimal] | None = None) -> Chain:
    """Six days of one entry at noon each, then a tie on day 6: every day but the last ends on
    a single entry, so any of them can be a boundary."""
    offsets = [timedelta(days=d, hours=12) for d in range(6)] + [timedelta(days=5, hours=12)]
    return Chain(
        amounts=money("-1", "-2", "50", "-3", "-4", "-5", "-6"),
        offsets=offsets,
        opening=Decimal(100),
        account=account,
        gaps=gaps or {},
    )


def _landed(warehouse: Warehouse, chain: Chain, upto: int | None = None) -> pl.DataFrame:
    ledger = ledger_frame(chain)
    days = sorted(set(ledger["created_at"].dt.date().to_list()))
    part = ledger.filter(pl.col("created_at").dt.date() <= days[upto if upto is not None else -1])
    land_ledger(warehouse, part, first=days[0], last=part["created_at"].max().date())  # type: ignore[union-attr]
    return ledger


def test_a_daily_sync_is_reconciled_from_the_day_before_its_first(warehouse: Warehouse) -> None:
    """Days 1-4 reconciled, then a sync of days 3-6 with a hidden movement on day 5: the pass
    starts on day 3 (day 2 ends on one entry and carries the chain), keeps days 1-2's rows
    (their run_id says so) and finds the movement exactly as a full pass does."""
    account = "daily"
    chain = _days(account, gaps={4: Decimal("0.5")})
    ledger = _landed(warehouse, chain, upto=3)
    options = ReconcileOptions()
    reconcile_account(warehouse, account, options, "day-4")
    land_ledger(warehouse, ledger.filter(pl.col("created_at") >= T0 + timedelta(days=2)),
                first=date(2025, 1, 3), last=date(2025, 1, 6), run_id="sync-2")  # fmt: skip
    result = reconcile_account(warehouse, account, options, "day-6")
    assert result.pass_kind == "incremental from 2025-01-03"
    with open_read_only(warehouse.path, lock_timeout_s=60) as con:
        runs = con.execute(
            "SELECT day, run_id FROM daily_balance WHERE account = ? ORDER BY day", [account]
        ).fetchall()
        carry = con.execute(
            "SELECT mode, reconciled_from, reason FROM reconciliation_carry WHERE account = ?",
            [account],
        ).fetchall()
    assert [r for _, r in runs] == ["day-4"] * 2 + ["day-6"] * 4
    assert carry == [("incremental", date(2025, 1, 3), "incremental from 2025-01-03")]
    [movement] = result.continuity_breaks.rows(named=True)
    assert movement["gap"] == Decimal("0.5")
    kept = everything(warehouse, account, "day-6")
    full = reconcile_account(warehouse, account, options, "full", full=True)
    assert everything(warehouse, account, "full") == kept
    assert_same_result(result, full)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("tolerance", "full: settings, schema or subscription/campaign snapshots changed"),
        ("plan", "full: settings, schema or subscription/campaign snapshots changed"),
        ("first day", "full: no day in the 40 days before 2025-01-01 ends on a single entry"),
        ("foreign run", "full: the carried state is not the latest reconciliation's"),
        ("infer", "full: the sign convention is inferred over the whole ledger"),
    ],
)
def test_a_full_pass_when_the_carried_state_is_older_than_the_change(
    warehouse: Warehouse, change: str, reason: str
) -> None:
    account = f"stale-{change.replace(' ', '-')}"
    chain = _days(account)
    ledger = _landed(warehouse, chain)
    options = ReconcileOptions()
    first = reconcile_account(warehouse, account, options, f"{account}-1")
    assert first.pass_kind == "full: no carried state (first reconciliation)"
    if change == "tolerance":
        options = dataclasses.replace(options, tolerance=Decimal("0.01"))
    elif change == "plan":
        land_snapshots(warehouse, account, balance=None, period=None,
                       plans=[(T0 + timedelta(days=1), "Growth")])  # fmt: skip
    elif change == "first day":
        land_ledger(warehouse, ledger, run_id="resync")
    elif change == "foreign run":
        with warehouse.replacing_for_account(account, ()) as out:
            out.append("reconciliation_runs", [{
                "account": account, "run_id": "elsewhere", "checked_at": datetime.now(UTC),
                "sign_convention": "signed", "sign_inferred": False, "tolerance": Decimal(0),
                "entries": 0, "continuity_breaks": 0, "ambiguous_ties": 0,
            }])  # fmt: skip
    else:
        options = dataclasses.replace(options, sign_convention="infer")
    again = reconcile_account(warehouse, account, options, f"{account}-2")
    assert again.pass_kind == reason
    found = everything(warehouse, account, f"{account}-2")
    reconcile_account(warehouse, account, options, f"{account}-3", full=True)
    assert everything(warehouse, account, f"{account}-3") == found


def test_an_acknowledgement_survives_an_incremental_pass(warehouse: Warehouse) -> None:
    """The first finding (the opening: the ledger opens at 100), acknowledged, stays acknowledged
    when a later sync is reconciled from day 4: its row is kept, and keeps its id."""
    account = "acked"
    chain = _days(account, gaps={1: Decimal("-2.5")})
    ledger = _landed(warehouse, chain, upto=3)
    first = reconcile_account(warehouse, account, ReconcileOptions(), "acked-1")
    acknowledge_one(warehouse, first)
    land_ledger(warehouse, ledger.filter(pl.col("created_at") >= T0 + timedelta(days=3)),
                first=date(2025, 1, 4), last=date(2025, 1, 6), run_id="sync-2")  # fmt: skip
    second = reconcile_account(warehouse, account, ReconcileOptions(), "acked-2")
    assert second.pass_kind == "incremental from 2025-01-04"
    assert second.acknowledged == {first.breaks["break_id"][0]}
    assert second.breaks["break_id"].to_list() == first.breaks["break_id"].to_list()
    assert second.open_findings == second.breaks.height - 1


# The simulator's scenarios whose ledgers reconciliation is tested on, with the convention an
# account of that platform is configured with.
SCENARIOS = {
    "small": "signed",
    "hidden_movements": "signed",
    "unsigned": "unsigned",
    "opening_balance": "signed",
    "breakdown_mismatch": "signed",
    "plan_change": "signed",
}
NOW = datetime(2026, 11, 20, 15, tzinfo=UTC)
# Each scenario's company with 45 of its 90 days: still several slices of 1000 entries, the
# hidden movement 40 days back, the plan's changes and this month's breakdown, and every day
# before the week the daily sync re-reads is carried; the other 45 days were only more rows to
# land and reconcile three times.
HISTORY_DAYS = 45


def simulated_ledger(scenario: str, account: str) -> tuple[pl.DataFrame, Any, str]:
    """A scenario's served ledger (in process, no HTTP), its simulator and its company."""
    from simulator import Scenario
    from simulator.core import Simulator

    named = Scenario.named(scenario)
    company = named.companies[0].name
    sim = Simulator(named.with_company(company, history_days=HISTORY_DAYS), seed=3, now=NOW)
    rows = [
        {
            "account": account,
            "entry_id": "",
            "created_at": e["createdAt"],
            "entry_type": e["type"],
            "amount": e["amount"],
            "description": e["description"],
            "has_description": e["hasDescription"],
            "channel": e["channel"],
            "agent_id": e["agentId"],
            "campaign_id": e["campaignId"],
            "balance_after": e["balanceAfter"],
        }
        for e in sim.truth(company)
    ]
    return pl.DataFrame(rows, schema=LEDGER_SCHEMA, orient="row"), sim, company


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_an_incremental_pass_equals_a_full_one_on_the_simulator_scenarios(
    warehouse: Warehouse, scenario: str
) -> None:
    """Synced up to a week ago but one entry, then a daily sync (lookback 7) lands the week,
    the late entry and a hidden movement two days back."""
    account = f"sim-{scenario}"
    ledger, sim, company = simulated_ledger(scenario, account)
    day_of = pl.col("created_at").dt.date()
    last = ledger["created_at"].max().date()  # type: ignore[union-attr]
    first = ledger["created_at"].min().date()  # type: ignore[union-attr]
    synced = ledger.filter(day_of <= last - timedelta(days=3))
    late = synced.filter(day_of == last - timedelta(days=5)).height // 2
    index = synced.with_row_index().filter(day_of == last - timedelta(days=5))["index"][late]
    synced = synced.filter(pl.int_range(pl.len()) != index)
    land_ledger(warehouse, synced, first=first, last=last - timedelta(days=3), run_id="sync-1")
    # The four snapshots in one commit, as a sync's snapshot step lands them.
    snapshots = []
    for table, doc in (
        ("consumption_snapshots", sim.consumption(company)),
        ("breakdown_snapshots", sim.breakdown(company)),
        ("subscription_snapshots", sim.subscription(company)),
        ("campaigns", sim.campaigns(company)),
    ):
        rows = snapshot_rows(table, doc, account, fetched_at=NOW)
        snapshots.append(SnapshotLanding(table, account, rows.content_hash, rows.rows))
    landed = warehouse.land_snapshots(snapshots)
    assert all(stored is True for stored in landed.values()), landed
    moved_from = datetime.combine(last - timedelta(days=2), datetime.min.time(), UTC)
    shifted = pl.when(pl.col("created_at") >= moved_from).then(Decimal("0.75"))
    shifted = shifted.otherwise(Decimal(0))
    recent = ledger.filter(day_of >= last - timedelta(days=7)).with_columns(
        (pl.col("balance_after") + shifted).cast(pl.Decimal(18, 6))
    )

    def daily_sync() -> None:
        land_ledger(warehouse, recent, first=last - timedelta(days=7), last=last, run_id="sync-2")

    options = ReconcileOptions(sign_convention=SCENARIOS[scenario], slice_entries=1000)
    result = incremental_equals_full(warehouse, account, options, daily_sync)
    assert result.pass_kind.startswith("incremental from "), result.pass_kind
    assert result.pass_kind >= f"incremental from {(last - timedelta(days=9)).isoformat()}"
    moved = result.continuity_breaks.filter(pl.col("gap") == Decimal("0.75"))
    assert moved.height == 1
