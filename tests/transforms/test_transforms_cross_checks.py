"""Summary and breakdown checks: mismatches found per item, 'unavailable' instead of errors.

The snapshots reach the checks as reconciliation reads them: responses turned into warehouse rows
by the snapshot row builders (the one parse), then read as stored. The ledger side is what
reconciliation hands over: the last entry of the chain, and debits summed per item key.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import polars as pl
import pytest

from tests.reconciliation.warehouse_ledgers import snapshot_rows
from tests.transforms.ledgers import ledger_frame, usage_chain
from transforms.breaks import BREAKS_SCHEMA
from transforms.continuity import reconcile_continuity
from transforms.cross_checks import (
    CheckOutcome,
    LedgerDebits,
    ReportedBreakdown,
    compare_breakdown,
    compare_summary,
    ledger_debits,
    ledger_debits_of_each,
    ledger_end,
    read_breakdown,
    read_summary,
)

FETCHED = datetime(2025, 3, 1, tzinfo=UTC)


def _ordered(account: str = "acme") -> pl.DataFrame:
    chain = usage_chain(account)
    return reconcile_continuity(ledger_frame(chain)).ordered


def _stored(
    table: str, doc: Any, fields: dict[str, str] | None = None, balance_field: str = "balance"
) -> list[dict[str, Any]]:
    """The rows a response lands as; None is a snapshot never fetched (no rows)."""
    if doc is None:
        return []
    landed = snapshot_rows(
        table, doc, "acme", fetched_at=FETCHED, fields=fields, balance_field=balance_field
    )
    return landed.rows


def _summary(doc: Any, balance_field: str = "balance") -> Decimal | str:
    return read_summary(_stored("consumption_snapshots", doc, balance_field=balance_field))


def _breakdown(doc: Any, fields: dict[str, str] | None = None) -> ReportedBreakdown | str:
    return read_breakdown(_stored("breakdown_snapshots", doc, fields))


def _breakdown_check(
    doc: Any, fields: dict[str, str] | None = None, ordered: pl.DataFrame | None = None
) -> CheckOutcome:
    """As reconciliation runs it: the ledger's debits are summed only over a readable period."""
    reported = _breakdown(doc, fields)
    if isinstance(reported, str):
        return compare_breakdown(reported, LedgerDebits("acme", {}))
    entries = _ordered() if ordered is None else ordered
    debits = ledger_debits(entries, reported.start, reported.end)
    return compare_breakdown(reported, LedgerDebits("acme", debits))


@pytest.mark.parametrize("value", [Decimal("141.5"), "141.5", 141.5, "141.500000"])
def test_summary_matching_the_last_balance_is_ok(value: object) -> None:
    outcome = compare_summary(ledger_end(_ordered()), _summary({"balance": value}))
    assert outcome.status == "ok"
    assert outcome.breaks.height == 0


def test_summary_difference_is_a_break_after_the_last_entry() -> None:
    outcome = compare_summary(
        ledger_end(_ordered()), _summary({"balance": 140}), tolerance=Decimal("0.5")
    )
    assert outcome.status == "break"
    assert outcome.breaks.schema == pl.Schema(BREAKS_SCHEMA)
    row = outcome.breaks.row(0, named=True)
    assert row["kind"] == "summary"
    assert (row["expected_balance"], row["observed_balance"], row["gap"]) == (
        Decimal("141.5"),
        Decimal(140),
        Decimal("-1.5"),
    )
    assert row["break_start"] == datetime(2025, 1, 2, tzinfo=UTC)
    assert row["break_end"] is None
    assert row["before_entry_id"] == "acme-00004"
    assert "expected 141.500000" in row["detail"] and "difference -1.500000" in row["detail"]
    assert outcome.tolerance == Decimal("0.5")


@pytest.mark.parametrize(
    "snapshot", [None, {}, {"creditsUsed": 1}, {"balance": None}, {"balance": "n/a"}]
)
def test_summary_is_unavailable_rather_than_failing(snapshot: dict[str, object] | None) -> None:
    outcome = compare_summary(ledger_end(_ordered()), _summary(snapshot))
    assert outcome.status == "unavailable"
    assert outcome.breaks.height == 0
    assert outcome.message


def test_summary_field_name_is_configurable() -> None:
    balance = _summary({"credits": "141.5"}, balance_field="credits")
    assert compare_summary(ledger_end(_ordered()), balance).status == "ok"


def test_summary_reads_only_the_configured_field() -> None:
    outcome = compare_summary(ledger_end(_ordered()), _summary({"balance": 1}, "credits"))
    assert outcome.status == "unavailable"


@pytest.mark.parametrize(
    "doc", [{"balance": 1, "credits": "141.5"}, {"credits": "141.5", "balance": 1}]
)
def test_summary_configured_field_wins_over_our_own_name_in_any_order(
    doc: dict[str, Any],
) -> None:
    outcome = compare_summary(ledger_end(_ordered()), _summary(doc, "credits"))
    assert outcome.status == "ok", outcome.message


def test_summary_needs_to_know_the_account_when_several() -> None:
    both = pl.concat([_ordered("a"), _ordered("b")])
    balance = _summary({"balance": "141.5"})
    assert compare_summary(ledger_end(both), balance).status == "unavailable"
    assert compare_summary(ledger_end(both, "b"), balance).status == "ok"


BREAKDOWN: dict[str, Any] = {
    "periodStart": "2025-01-01T00:00:00Z",
    "periodEnd": "2025-02-01T00:00:00Z",
    "items": [
        {"agentId": "agt_a", "campaignId": "cmp_x", "channel": "Phone", "credits": "6.5"},
        {"agentId": "agt_b", "campaignId": "cmp_x", "channel": "Chat", "credits": 3},
    ],
}


def test_breakdown_matching_gross_debits_is_ok() -> None:
    outcome = _breakdown_check(BREAKDOWN)
    assert outcome.status == "ok", outcome.message


def test_breakdown_mismatches_are_found_per_item_including_one_sided() -> None:
    items = [
        {"agentId": "agt_a", "campaignId": "cmp_x", "channel": "Phone", "credits": "6"},
        {"agentId": "agt_c", "campaignId": "cmp_z", "channel": "SMS", "credits": Decimal("2")},
    ]
    outcome = _breakdown_check({**BREAKDOWN, "items": items})
    assert outcome.status == "break"
    rows = outcome.breaks.sort("agent_id").to_dicts()
    assert [(r["agent_id"], r["expected_balance"], r["observed_balance"]) for r in rows] == [
        ("agt_a", Decimal("6.5"), Decimal(6)),
        ("agt_b", Decimal(3), Decimal(0)),
        ("agt_c", Decimal(0), Decimal(2)),
    ]
    assert {r["kind"] for r in rows} == {"breakdown"}
    assert rows[0]["gap"] == Decimal("-0.5")
    assert rows[0]["break_start"] == datetime(2025, 1, 1, tzinfo=UTC)
    assert "no ledger debits" in rows[2]["detail"]
    assert "no breakdown item" in rows[1]["detail"]


def test_breakdown_period_is_half_open() -> None:
    period = {**BREAKDOWN, "periodStart": "2025-01-02T00:00:00+00:00"}
    outcome = _breakdown_check(period)
    found = {r["agent_id"]: r["expected_balance"] for r in outcome.breaks.to_dicts()}
    assert found == {"agt_a": Decimal(4), "agt_b": Decimal(0)}


def test_breakdown_field_names_are_configurable() -> None:
    fields = {
        "breakdown.items": "rows",
        "breakdown.item.credits": "amount",
        "breakdown.periodStart": "from",
        "breakdown.periodEnd": "to",
    }
    renamed = {
        "from": "2025-01-01T00:00:00Z",
        "to": "2025-02-01T00:00:00Z",
        "rows": [
            {**{k: v for k, v in item.items() if k != "credits"}, "amount": item["credits"]}
            for item in BREAKDOWN["items"]
        ],
    }
    assert _breakdown_check(renamed, fields).status == "ok"


@pytest.mark.parametrize(
    "breakdown",
    [
        None,
        {},
        {**BREAKDOWN, "items": None},
        {**BREAKDOWN, "periodEnd": "soon"},
        {**BREAKDOWN, "items": [{"agentId": "a"}]},
        {"items": []},
    ],
)
def test_breakdown_is_unavailable_rather_than_failing(breakdown: dict[str, object] | None) -> None:
    outcome = _breakdown_check(breakdown)
    assert outcome.status == "unavailable"
    assert outcome.breaks.schema == pl.Schema(BREAKS_SCHEMA)


def test_money_is_parsed_through_text_once_when_it_lands() -> None:
    assert _summary({"balance": 0.1}) == Decimal("0.1")
    assert isinstance(_summary({"balance": True}), str)
    assert isinstance(_summary({"balance": "NaN"}), str)
    assert _summary({"balance": " 12.30 "}) == Decimal("12.30")


def test_debits_of_many_accounts_in_one_pass_are_each_accounts_own() -> None:
    """An agency's tails summed in one pass, each account within its own breakdown period, equal
    what each account's pass sums alone; an account with no debits in its period has none."""
    ordered = pl.concat([_ordered("acme"), _ordered("beta"), _ordered("gone")])
    at = ordered["created_at"].sort()
    periods = {
        "acme": (at[0], at[-1] + (at[-1] - at[0])),
        "beta": (at[len(at) // 2], at[-1]),
        "gone": (at[-1] + (at[-1] - at[0]), at[-1] + 2 * (at[-1] - at[0])),
    }
    each = ledger_debits_of_each(ordered, periods)
    for account, (start, end) in periods.items():
        alone = ordered.filter(pl.col("account") == account)
        assert each[account] == ledger_debits(alone, start, end), account
    assert each["acme"] and each["beta"] != each["acme"] and each["gone"] == {}
