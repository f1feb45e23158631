"""The reconciliation step writes every account in one transaction, each staged and validated
on its own first: an account whose rows do not fit is left out, the others are written."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from pipelines.reconciliation.run import (
    ReconcileOptions,
    ReconciliationResult,
    SharedReads,
    commit_staged,
    reconcile_account,
    stage_account,
)
from pipelines.warehouse.derived import StagedInvalid, validate_staged
from pipelines.warehouse.writer import StagedDerived, Warehouse
from tests.pipeline.helpers import copy_folder
from tests.reconciliation.test_incremental_reconciliation import _days, everything
from tests.reconciliation.warehouse_ledgers import land_ledger
from tests.transforms.ledgers import ledger_frame

OPTIONS = ReconcileOptions()


@pytest.fixture(scope="module")
def two_ledgers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new warehouse with acme's and globex's ledgers landed, made once for the module: each
    test writes to a copy of its own (``warehouse``)."""
    folder = tmp_path_factory.mktemp("two-ledgers")
    wh = Warehouse(folder / "warehouse.duckdb", lock_timeout_s=60)
    wh.ensure()
    for account in ("acme", "globex"):
        land_ledger(wh, ledger_frame(_days(account)))
    return folder


@pytest.fixture
def warehouse(two_ledgers: Path, tmp_path: Path) -> Iterator[Warehouse]:
    copy_folder(two_ledgers, tmp_path)
    yield Warehouse(tmp_path / "warehouse.duckdb", lock_timeout_s=60)


def _staged(
    warehouse: Warehouse, account: str, run_id: str, root: Path
) -> tuple[ReconciliationResult, StagedDerived]:
    """One account staged as the asset stages it: through a read connection and the run's
    shared reads."""
    with warehouse.reading(OPTIONS.duckdb_memory_limit) as source:
        shared = SharedReads.read(source, [account])
        return stage_account(source, shared, account, OPTIONS, run_id, root)


def test_accounts_staged_apart_are_committed_together(warehouse: Warehouse, tmp_path: Path) -> None:
    staged = [
        _staged(warehouse, account, "together", tmp_path)[1] for account in ("acme", "globex")
    ]
    assert everything(warehouse, "acme", "together")["ledger_enriched"] == []  # staged only
    commit_staged(warehouse, staged, OPTIONS.duckdb_memory_limit)
    for account in ("acme", "globex"):
        assert len(everything(warehouse, account, "together")["ledger_enriched"]) == 7


def test_rows_that_do_not_fit_are_refused_before_the_transaction(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    _, staged = _staged(warehouse, "acme", "bad", tmp_path)
    [chain] = staged.files["ledger_chain"]
    pl.read_parquet(chain).with_columns(surprise=pl.lit(1)).write_parquet(chain)
    with pytest.raises(StagedInvalid, match=r"^account acme: staged ledger_chain rows do not fit"):
        validate_staged(staged)


def test_a_failing_commit_writes_no_account(warehouse: Warehouse, tmp_path: Path) -> None:
    """All or nothing: a file gone between staging and the commit fails the one transaction,
    and the account staged beside it is not half written."""
    _, good = _staged(warehouse, "acme", "all-or-nothing", tmp_path)
    _, bad = _staged(warehouse, "globex", "all-or-nothing", tmp_path)
    missing = dataclasses.replace(bad, files={"ledger_chain": [tmp_path / "gone.parquet"]})
    with pytest.raises(Exception, match=r"gone\.parquet"):
        commit_staged(warehouse, [good, missing], OPTIONS.duckdb_memory_limit)
    assert everything(warehouse, "acme", "all-or-nothing")["reconciliation_runs"] == []


def test_after_a_failed_reconciliation_the_next_is_full(warehouse: Warehouse) -> None:
    """A failure leaves the account's rows as they were, and its carry marked: whatever made it
    fail, the next pass re-derives everything rather than resume from rows it cannot vouch for."""
    reconcile_account(warehouse, "acme", OPTIONS, "before")
    kept = everything(warehouse, "acme", "before")
    with pytest.raises(ValueError, match="tolerance must not be negative"):
        reconcile_account(warehouse, "acme", dataclasses.replace(OPTIONS, tolerance=-1), "bad")
    assert everything(warehouse, "acme", "before") == kept
    after = reconcile_account(warehouse, "acme", OPTIONS, "after")
    assert after.pass_kind == "full: the last reconciliation of this account failed"
    assert everything(warehouse, "acme", "after") == kept
