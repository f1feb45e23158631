"""An agency reconciled in one pass gives each company exactly what its own pass gives.

The reconciliation reads what every account needs of the small tables and of its past once for
all the run's accounts (``SharedReads``: the snapshots, the acknowledgements, the carried state,
the days before the boundary and the kept chain at it), then stages each. Each example lands a
generated agency (the sliced reconciliation's ledgers: ties at day ends, identical entries,
movements at day boundaries, both conventions and "infer", each company with its own snapshots
and options), reconciles it fully, lands a later sync of some companies (new days, re-read days,
an entry landed late) and reconciles every company together; then the same data, company by
company, in a copy of the warehouse, and fully: the same rows in every derived table, with exact
Decimals, and the same results.
"""

from __future__ import annotations

import dataclasses
import itertools
import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pipelines.reconciliation import tails as tails_module
from pipelines.reconciliation.run import (
    ReconcileOptions,
    SharedReads,
    reconcile_account,
    reconcile_accounts,
)
from pipelines.warehouse import derived
from pipelines.warehouse.writer import Warehouse
from tests.reconciliation.test_incremental_reconciliation import (
    acknowledge_one,
    everything,
    land_case_snapshots,
    with_history,
)
from tests.reconciliation.test_sliced_reconciliation import SOME, Case, assert_same_result
from tests.reconciliation.test_sliced_reconciliation import cases as one_case
from tests.reconciliation.warehouse_ledgers import land_ledger
from tests.transforms.ledgers import ledger_frame, unsigned

SERIAL = itertools.count()


def _land(warehouse: Warehouse, case: Case, account: str, resync: int) -> Callable[[], None]:
    """The company's first sync landed (every day but the last `resync` ones, which a later
    sync reads); its later sync returned, to land when the test says."""
    chain = with_history(dataclasses.replace(case.chain, account=account))
    ledger = ledger_frame(chain)
    if case.data_unsigned:
        ledger = unsigned(ledger)
    days = sorted(set(ledger["created_at"].dt.date().to_list()))
    day_of = pl.col("created_at").dt.date()
    back = max(0, len(days) - 1 - resync)
    early = ledger.filter(day_of < days[back]) if resync else ledger
    if early.height:
        land_ledger(warehouse, early, first=days[0], last=days[back], run_id=f"first-{account}")
    land_case_snapshots(warehouse, case, chain)
    recent = ledger.filter(day_of >= days[back])

    def later() -> None:
        if resync:
            land_ledger(
                warehouse, recent, first=days[back], last=days[-1], run_id=f"later-{account}"
            )

    return later


@pytest.mark.slow
@settings(SOME, max_examples=8)
@given(
    cases=st.lists(one_case(), min_size=2, max_size=4),
    resyncs=st.lists(st.integers(0, 2), min_size=4, max_size=4),
    # The tails' read bound: every tail in one read, a few reads, or each company on its own.
    tail_entries=st.sampled_from([tails_module.TAIL_ENTRIES, 12, 1]),
)
def test_an_agency_pass_equals_each_companys_own_and_a_full_one(
    tmp_path_factory: object, cases: list[Case], resyncs: list[int], tail_entries: int
) -> None:
    with pytest.MonkeyPatch.context() as bound:
        bound.setattr(tails_module, "TAIL_ENTRIES", tail_entries)
        # The commit reads the staged files in groups (5,000 companies' at once ran out of
        # memory): one file per INSERT here, so every commit of the test is grouped.
        bound.setattr(derived, "FILES_PER_INSERT", 1)
        _agency_pass(tmp_path_factory, cases, resyncs, whole=tail_entries > 12)


def _agency_pass(
    tmp_path_factory: object, cases: list[Case], resyncs: list[int], *, whole: bool
) -> None:
    root = Path(tmp_path_factory.mktemp("agency"))  # type: ignore[attr-defined]
    together = Warehouse(root / "together.duckdb", lock_timeout_s=60)
    together.ensure()
    serial = next(SERIAL)
    accounts = [f"company-{serial}-{i}" for i in range(len(cases))]
    options: dict[str, ReconcileOptions] = {
        a: c.options for a, c in zip(accounts, cases, strict=True)
    }
    later = [_land(together, c, a, r) for a, c, r in zip(accounts, cases, resyncs, strict=False)]
    first = reconcile_accounts(together, options, "first")
    for account in accounts[:1]:  # one company's finding acknowledged between the syncs
        acknowledge_one(together, first[account])
    for sync in later:
        sync()
    alone = Warehouse(root / "alone.duckdb", lock_timeout_s=60)
    shutil.copyfile(together.path, alone.path)

    with together.reading(None) as source:  # what the agency pass below reads first
        tails = SharedReads.read(source, accounts, options).reconciled
    agency = reconcile_accounts(together, options, "agency")
    for account in accounts:
        if whole and agency[account].pass_kind.startswith("incremental"):
            # Its tail was reconciled in the one pass over every tail (signed or unsigned; an
            # inferred convention is always a full pass).
            assert account in tails, account
        event(f"tails reconciled together: {len(tails)}")
        own = reconcile_account(alone, account, options[account], "agency")
        assert everything(together, account, "agency") == everything(alone, account, "agency")
        assert_same_result(agency[account], own)
        assert agency[account].pass_kind == own.pass_kind
        event(own.pass_kind.split(" 20")[0])  # --hypothesis-show-statistics: both kinds
        full = reconcile_account(alone, account, options[account], "full", full=True)
        assert everything(alone, account, "full") == everything(together, account, "agency")
        assert_same_result(agency[account], full)
