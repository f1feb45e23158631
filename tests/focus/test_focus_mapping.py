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
    "detail": pl.Utf8, "anchor": pl.Utf8,
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
    """FOCUS 1.2 for prepaid credits: the purchase billed (BilledCost), the use amortized
    (EffectiveCost), a free grant moving no money (its value in ListCost)."""
    entries = _entries(
        ("Usage", "debit", "-999999999999.999999"),
        ("PlanGrant", "credit", "1000.000001"),
        ("Refund", "refund", "2.5"),
        ("Expiry", "other", "-3"),
        ("TopUp", "credit", "50"),
        ("Promotion", "other", "7"),
    )
    hidden = pl.DataFrame(
        [("acme", "brk", date(2026, 11, 2), Decimal("-0.000001"), "expected 1, found 0.999999",
          "e0")],
        schema=HIDDEN_SCHEMA,
        orient="row",
    )  # fmt: skip
    pricing = {
        "acme": Pricing(
            PRICE, "JPY", "api.example.com/acme", frozenset({"Promotion"}), frozenset({"PlanGrant"})
        )
    }
    rows = focus_rows(entries, hidden, date(2026, 11, 1), pricing).to_dicts()
    assert money_scale(pricing) == 6 + MAX_PRICE_PLACES
    assert [r["ChargeCategory"] for r in rows] == [
        "Usage", "Purchase", "Credit", "Adjustment", "Purchase", "Credit", "Adjustment",
    ]  # fmt: skip
    usage, grant, refund, expiry, top_up, promotion, moved = rows
    used = Decimal("999999999999.999999") * PRICE  # no digit lost
    assert (usage["BilledCost"], usage["EffectiveCost"]) == (0, used)
    assert usage["PricingQuantity"] == Decimal("999999999999.999999")
    assert usage["PricingCurrencyEffectiveCost"] == Decimal("999999999999.999999")
    assert (grant["BilledCost"], grant["EffectiveCost"]) == (Decimal("1000.000001") * PRICE, 0)
    assert (grant["ChargeFrequency"], top_up["ChargeFrequency"]) == ("Recurring", "One-Time")
    assert top_up["BilledCost"] == 50 * PRICE and top_up["EffectiveCost"] == 0
    assert (refund["BilledCost"], refund["EffectiveCost"]) == (0, Decimal("-2.5") * PRICE)
    assert (expiry["BilledCost"], expiry["EffectiveCost"]) == (0, Decimal(3) * PRICE)
    assert (promotion["BilledCost"], promotion["EffectiveCost"]) == (0, 0)  # free
    assert promotion["ListCost"] == 7 * PRICE and promotion["ContractedCost"] == 0
    assert moved["EffectiveCost"] == Decimal("0.000001") * PRICE and moved["x_HiddenMovement"]
    assert moved["BilledCost"] == 0 and moved["x_EntryId"].startswith("hm-")
    assert {r["BillingAccountId"] for r in rows} == {"api.example.com/acme"}
    assert usage["ChargeDescription"] == "Usage"  # no description: its type, never ""
    assert usage["ChargePeriodStart"] == datetime(2026, 11, 1, tzinfo=UTC)  # the UTC day
    assert moved["ChargePeriodStart"] == datetime(2026, 11, 2, tzinfo=UTC)
    assert usage["Tags"] == '{"creditlens/agent": "agt", "creditlens/channel": "Phone"}'
    assert grant["PricingCurrency"] == "JPY" and usage["PricingCurrency"] == "Credits"


def test_a_hidden_movement_keeps_its_id_when_its_break_id_changes() -> None:
    """After the last entry, then between two once later entries arrive: a new break id, the
    same movement, the same x_EntryId in every export of the month."""
    entries = _entries(("Usage", "debit", "-1"))
    pricing = {"acme": Pricing(Decimal("0.01"), "EUR")}
    ids = []
    for break_id in ("brk-after-last", "brk-between"):
        hidden = pl.DataFrame(
            [("acme", break_id, date(2026, 11, 2), Decimal("-4.5"), "", "e0")],
            schema=HIDDEN_SCHEMA,
            orient="row",
        )
        rows = focus_rows(entries, hidden, date(2026, 11, 1), pricing)
        ids.append(rows.filter(pl.col("x_HiddenMovement"))["x_EntryId"].item())
    assert ids[0] == ids[1] and ids[0].startswith("hm-")


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
    assert row["ListCost"] == row["EffectiveCost"] == exact and row["BilledCost"] == 0
