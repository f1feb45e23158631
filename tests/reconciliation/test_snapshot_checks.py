"""The summary and breakdown checks read the snapshots as they landed in the warehouse.

A response is parsed once, by the snapshot row builders when it lands; reconciliation reads the
stored rows back and compares them with the ledger. These run that whole way on a real file.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pipelines.reconciliation.run import ReconcileOptions, ReconciliationResult, reconcile_account
from pipelines.warehouse.writer import Warehouse
from tests.reconciliation.warehouse_ledgers import (
    FETCHED_AT,
    breakdown_doc,
    land_document,
    land_ledger,
    land_snapshots,
)
from tests.transforms.ledgers import T0, Chain, ledger_frame, usage_chain

SERIAL = itertools.count()
PERIOD = (T0, T0 + timedelta(days=31))
# What the ledger below debits in PERIOD, per (agent, campaign, channel).
ITEMS = [
    ("agt_a", "cmp_x", "Phone", Decimal("6.5")),
    ("agt_b", "cmp_x", "Chat", Decimal(3)),
]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    wh = Warehouse(
        Path(tmp_path_factory.mktemp("snapshots")) / "warehouse.duckdb", lock_timeout_s=60
    )
    wh.ensure()
    yield wh


def _landed_ledger(warehouse: Warehouse) -> str:
    """A fresh account holding a small ledger whose last balance_after is 141.5, opening at
    zero (a grant of 100 first), so only what a test does to the snapshots is found."""
    account = f"acme-{next(SERIAL)}"
    chain = usage_chain(account)
    land_ledger(warehouse, ledger_frame(_granted(chain)))
    return account


def _granted(chain: Chain) -> Chain:
    return dataclasses.replace(
        chain,
        amounts=[chain.opening, *chain.amounts],
        offsets=[-timedelta(hours=1), *chain.offsets],
        opening=Decimal(0),
        types=["PlanGrant", *(chain.types or [])],
        dimensions=[(None, None, None), *(chain.dimensions or [])],
    )


def _reconciled(warehouse: Warehouse, account: str) -> ReconciliationResult:
    return reconcile_account(warehouse, account, ReconcileOptions(), f"run-{next(SERIAL)}")


def test_landed_snapshots_that_match_the_ledger_are_ok(warehouse: Warehouse) -> None:
    account = _landed_ledger(warehouse)
    land_snapshots(warehouse, account, balance=Decimal("141.5"), period=PERIOD, items=ITEMS)
    result = _reconciled(warehouse, account)
    assert (result.summary.status, result.breakdown.status) == ("ok", "ok"), (
        result.summary.message,
        result.breakdown.message,
    )
    assert result.breaks.height == 0


def test_the_latest_snapshot_is_the_one_checked(warehouse: Warehouse) -> None:
    account = _landed_ledger(warehouse)
    land_snapshots(warehouse, account, balance=Decimal(1), period=PERIOD, items=ITEMS[:1])
    later = FETCHED_AT + timedelta(days=1)
    land_snapshots(
        warehouse, account, balance=Decimal("141.5"), period=PERIOD, items=ITEMS, fetched_at=later
    )
    result = _reconciled(warehouse, account)
    assert (result.summary.status, result.breakdown.status) == ("ok", "ok")


@pytest.mark.parametrize(
    ("table", "doc"),
    [
        ("consumption_snapshots", {"creditsUsed": 1}),
        ("consumption_snapshots", {"balance": None}),
        ("breakdown_snapshots", {"periodStart": "soon", "items": []}),
        ("breakdown_snapshots", {"items": [{"agentId": "a"}]}),
        ("breakdown_snapshots", {"items": []}),
    ],
)
def test_a_snapshot_that_landed_unreadable_makes_its_check_unavailable(
    warehouse: Warehouse, table: str, doc: dict[str, Any]
) -> None:
    account = _landed_ledger(warehouse)
    land_document(warehouse, table, account, doc)
    result = _reconciled(warehouse, account)
    check = result.summary if table == "consumption_snapshots" else result.breakdown
    assert check.status == "unavailable"
    assert "not checked" in check.message
    assert result.breaks.height == 0


def test_a_breakdown_finer_than_a_micro_credit_is_unavailable(warehouse: Warehouse) -> None:
    account = _landed_ledger(warehouse)
    doc = breakdown_doc(PERIOD, [("agt_a", "cmp_x", "Phone", Decimal("0.0000001"))])
    land_document(warehouse, "breakdown_snapshots", account, doc)
    assert _reconciled(warehouse, account).breakdown.status == "unavailable"


@pytest.mark.parametrize(
    ("table", "doc", "field"),
    [
        (
            "breakdown_snapshots",
            breakdown_doc(PERIOD, [*ITEMS, ("agt_c", "cmp_y", "SMS", Decimal("1e12"))]),
            "items.2.credits",
        ),
        ("consumption_snapshots", {"balance": Decimal("141.5000001")}, "balance"),
        ("consumption_snapshots", {"balance": 1, "creditsUsed": "0.1234567"}, "creditsUsed"),
        ("consumption_snapshots", {"balance": 1, "creditsIncluded": "1e12"}, "creditsIncluded"),
    ],
)
def test_money_decimal_18_6_cannot_hold_exactly_lands_unreadable_naming_its_field(
    warehouse: Warehouse, table: str, doc: dict[str, Any], field: str
) -> None:
    account = _landed_ledger(warehouse)
    landed = land_document(warehouse, table, account, doc)
    assert not landed.shape_ok and landed.problem and landed.problem.startswith(f"{field}: ")
    assert [row["shape_ok"] for row in landed.rows] == [False]
    result = _reconciled(warehouse, account)
    check = result.summary if table == "consumption_snapshots" else result.breakdown
    assert check.status == "unavailable"
