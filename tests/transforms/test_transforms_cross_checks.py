"""Summary and breakdown checks: mismatches found per item, 'unavailable' instead of errors."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import polars as pl
import pytest

from tests.transforms.ledgers import Chain, ledger_frame, money, seconds
from transforms.breaks import BREAKS_SCHEMA
from transforms.continuity import reconcile_continuity
from transforms.cross_checks import BreakdownFields, breakdown_check, parse_money, summary_check


def _ordered(account: str = "acme") -> pl.DataFrame:
    chain = Chain(
        amounts=money("-2.5", "-3", "1", "-4", "50"),
        offsets=seconds(0, 60, 120, 86400, 86400),
        opening=Decimal(100),
        account=account,
        types=["Usage", "Usage", "Refund", "Usage", "TopUp"],
        dimensions=[
            ("agt_a", "cmp_x", "Phone"),
            ("agt_b", "cmp_x", "Chat"),
            ("agt_b", "cmp_x", "Chat"),
            ("agt_a", "cmp_x", "Phone"),
            (None, None, None),
        ],
    )
    return reconcile_continuity(ledger_frame(chain)).ordered


@pytest.mark.parametrize("value", [Decimal("141.5"), "141.5", 141.5, "141.500000"])
def test_summary_matching_the_last_balance_is_ok(value: object) -> None:
    outcome = summary_check(_ordered(), {"balance": value})
    assert outcome.status == "ok"
    assert outcome.breaks.height == 0


def test_summary_difference_is_a_break_after_the_last_entry() -> None:
    outcome = summary_check(_ordered(), {"balance": 140}, tolerance=Decimal("0.5"))
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
    outcome = summary_check(_ordered(), snapshot)
    assert outcome.status == "unavailable"
    assert outcome.breaks.height == 0
    assert outcome.message


def test_summary_field_name_is_configurable() -> None:
    assert summary_check(_ordered(), {"credits": "141.5"}, balance_field="credits").status == "ok"
    assert summary_check(_ordered(), {"balance": 1}, balance_field="credits").status == (
        "unavailable"
    )


def test_summary_needs_to_know_the_account_when_several() -> None:
    both = pl.concat([_ordered("a"), _ordered("b")])
    assert summary_check(both, {"balance": "141.5"}).status == "unavailable"
    assert summary_check(both, {"balance": "141.5"}, account="b").status == "ok"


BREAKDOWN = {
    "periodStart": "2025-01-01T00:00:00Z",
    "periodEnd": "2025-02-01T00:00:00Z",
    "items": [
        {"agentId": "agt_a", "campaignId": "cmp_x", "channel": "Phone", "credits": "6.5"},
        {"agentId": "agt_b", "campaignId": "cmp_x", "channel": "Chat", "credits": 3},
    ],
}


def test_breakdown_matching_gross_debits_is_ok() -> None:
    outcome = breakdown_check(_ordered(), BREAKDOWN)
    assert outcome.status == "ok", outcome.message


def test_breakdown_mismatches_are_found_per_item_including_one_sided() -> None:
    items = [
        {"agentId": "agt_a", "campaignId": "cmp_x", "channel": "Phone", "credits": "6"},
        {"agentId": "agt_c", "campaignId": "cmp_z", "channel": "SMS", "credits": Decimal("2")},
    ]
    outcome = breakdown_check(_ordered(), {**BREAKDOWN, "items": items})
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
    outcome = breakdown_check(_ordered(), period)
    found = {r["agent_id"]: r["expected_balance"] for r in outcome.breaks.to_dicts()}
    assert found == {"agt_a": Decimal(4), "agt_b": Decimal(0)}


def test_breakdown_field_names_are_configurable() -> None:
    fields = BreakdownFields(items="rows", credits="amount", period_start="from", period_end="to")
    renamed = {
        "from": datetime(2025, 1, 1, tzinfo=UTC),
        "to": datetime(2025, 2, 1, tzinfo=UTC),
        "rows": [{**i, "amount": i["credits"]} for i in BREAKDOWN["items"]],  # type: ignore[attr-defined]
    }
    assert breakdown_check(_ordered(), renamed, fields=fields).status == "ok"


@pytest.mark.parametrize(
    "breakdown",
    [
        None,
        {},
        {**BREAKDOWN, "items": None},
        {**BREAKDOWN, "periodEnd": "soon"},
        {**BREAKDOWN, "items": [{"agentId": "a"}]},
        {**BREAKDOWN, "items": [{"credits": "0.0000001"}]},
    ],
)
def test_breakdown_is_unavailable_rather_than_failing(breakdown: dict[str, object] | None) -> None:
    outcome = breakdown_check(_ordered(), breakdown)
    assert outcome.status == "unavailable"
    assert outcome.breaks.schema == pl.Schema(BREAKS_SCHEMA)


def test_money_is_parsed_through_text() -> None:
    assert parse_money(0.1) == Decimal("0.1")
    assert parse_money(True) is None
    assert parse_money("NaN") is None
    assert parse_money(" 12.30 ") == Decimal("12.30")
