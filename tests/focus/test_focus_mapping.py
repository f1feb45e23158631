"""transforms/focus.py alone, on frames shaped as focus_read returns them: exact money at any
price precision, the sign of each kind of row, and a UTC day whatever the entry's offset."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal, localcontext

import polars as pl

from pipelines.config.currencies import MAX_PRICE_PLACES
from transforms.focus import Pricing, focus_rows, money_scale

MONEY = pl.Decimal(18, 6)
ENTRY_SCHEMA = {
    "account": pl.Utf8, "entry_id": pl.Utf8, "chain_position": pl.Int64,
    "created_at": pl.Datetime("us", "UTC"), "entry_type": pl.Utf8, "category": pl.Utf8,
    "signed_amount": MONEY, "agent_id": pl.Utf8, "campaign_id": pl.Utf8,
    "campaign_name": pl.Utf8, "channel": pl.Utf8, "description": pl.Utf8,
}  # fmt: skip
HIDDEN_SCHEMA = {
    "account": pl.Utf8, "break_id": pl.Utf8, "observed_on": pl.Date, "gap": MONEY,
    "detail": pl.Utf8,
}  # fmt: skip
PRICE = Decimal("0.000000000007")  # 12 places: the most a credit_price may have
AT = datetime(2026, 10, 31, 23, 30, tzinfo=timezone(timedelta(hours=-2)))  # Nov 1st in UTC


def _entries(*rows: tuple[str, str, str]) -> pl.DataFrame:
    """(type, category, signed amount) rows of account "acme", created at ``AT``."""
    return pl.DataFrame(
        [
            ("acme", f"e{i}", i, AT.astimezone(UTC), t, c, Decimal(a), "agt", None, None,
             "Phone", "" if i == 0 else f"entry {i}")
            for i, (t, c, a) in enumerate(rows)
        ],
        schema=ENTRY_SCHEMA,
        orient="row",
    )  # fmt: skip


def test_money_is_exact_at_the_finest_price_and_each_kind_has_its_sign() -> None:
    entries = _entries(
        ("Usage", "debit", "-999999999999.999999"),
        ("PlanGrant", "credit", "1000.000001"),
        ("Refund", "refund", "2.5"),
        ("Expiry", "other", "-3"),
    )
    hidden = pl.DataFrame(
        [("acme", "brk", date(2026, 11, 2), Decimal("-0.000001"), "expected 1, found 0.999999")],
        schema=HIDDEN_SCHEMA,
        orient="row",
    )
    pricing = {"acme": Pricing(PRICE, "JPY")}
    rows = focus_rows(entries, hidden, date(2026, 11, 1), pricing).to_dicts()
    assert money_scale(pricing) == 6 + MAX_PRICE_PLACES
    assert [r["ChargeCategory"] for r in rows] == [
        "Usage", "Purchase", "Credit", "Adjustment", "Adjustment",
    ]  # fmt: skip
    usage, purchase, refund, expiry, moved = rows
    assert usage["BilledCost"] == Decimal("999999999999.999999") * PRICE  # no digit lost
    assert usage["PricingQuantity"] == Decimal("999999999999.999999")
    assert (purchase["BilledCost"], purchase["EffectiveCost"]) == (0, 0)
    assert purchase["ListCost"] == Decimal("1000.000001") * PRICE
    assert refund["BilledCost"] == Decimal("-2.5") * PRICE  # credits back: a negative cost
    assert expiry["BilledCost"] == Decimal(3) * PRICE  # credits lost: a cost
    assert moved["BilledCost"] == Decimal("0.000001") * PRICE and moved["x_HiddenMovement"]
    assert usage["ChargeDescription"] == "Usage"  # no description: its type, never ""
    assert usage["ChargePeriodStart"] == datetime(2026, 11, 1, tzinfo=UTC)  # the UTC day
    assert moved["ChargePeriodStart"] == datetime(2026, 11, 2, tzinfo=UTC)
    assert usage["Tags"] == '{"creditlens/agent": "agt", "creditlens/channel": "Phone"}'
    assert purchase["PricingCurrency"] == "JPY" and usage["PricingCurrency"] == "Credits"


def test_the_largest_amount_at_the_largest_price_still_fits_exactly() -> None:
    price = Decimal("99999999.999999999999")  # under PRICE_BOUND, 12 places
    entries = _entries(("Usage", "debit", "-999999999999.999999"))
    empty = pl.DataFrame(schema=HIDDEN_SCHEMA)
    row = focus_rows(entries, empty, date(2026, 11, 1), {"acme": Pricing(price, "EUR")}).row(
        0, named=True
    )
    with localcontext() as digits:  # the default 28 digits would round the 38 of the product
        digits.prec = 40
        exact = Decimal("999999999999.999999") * Decimal("99999999.999999999999")
    assert row["BilledCost"] == row["ListCost"] == row["EffectiveCost"] == exact
