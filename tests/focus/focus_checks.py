"""FOCUS 1.2's requirements on the columns the export writes, checked column by column.

Written from the specification's column pages (specification/columns/*.md of release v1.2):
presence, type, nullability and allowed values of every Mandatory column, and of the
conditional ones the export includes. One function per rule set, so a failure names the column.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import polars as pl

from pipelines.config.currencies import ISO_4217
from transforms.focus import MANDATORY

CHARGE_CATEGORIES = {"Usage", "Purchase", "Tax", "Credit", "Adjustment"}
CHARGE_FREQUENCIES = {"One-Time", "Recurring", "Usage-Based"}
SERVICE_CATEGORIES = {
    "AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
    "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
    "Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security",
    "Storage", "Web", "Other",
}  # fmt: skip
DECIMAL_COLUMNS = {
    "BilledCost", "ContractedCost", "EffectiveCost", "ListCost", "PricingQuantity",
    "ContractedUnitPrice", "ListUnitPrice", "PricingCurrencyContractedUnitPrice",
    "PricingCurrencyEffectiveCost", "PricingCurrencyListUnitPrice",
}  # fmt: skip
DATETIME_COLUMNS = {
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargePeriodEnd",
    "ChargePeriodStart",
}
# Mandatory columns that FOCUS 1.2 says "Allows nulls: False".
NOT_NULL = {
    "BilledCost", "BillingAccountId", "BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart",
    "ChargeCategory", "ChargePeriodEnd", "ChargePeriodStart", "ContractedCost", "EffectiveCost",
    "InvoiceIssuerName", "ListCost", "ProviderName", "PublisherName", "ServiceCategory",
    "ServiceName",
}  # fmt: skip
# Conditional or recommended columns the export includes, and their own not-null rules.
ALSO_NOT_NULL = {"ChargeFrequency", "PricingCurrency", "PricingCurrencyEffectiveCost"}
NUMERIC_TEXT = re.compile(r"-?\d+(\.\d+)?")
DATETIME_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


def check_parquet_types(dataset: pl.DataFrame) -> None:
    missing = [c for c in MANDATORY if c not in dataset.columns]
    assert not missing, f"mandatory columns missing: {missing}"
    for column in dataset.columns:
        dtype = dataset.schema[column]
        if column in DECIMAL_COLUMNS:
            assert isinstance(dtype, pl.Decimal), (column, dtype)
        elif column in DATETIME_COLUMNS:
            assert dtype == pl.Datetime("us", "UTC"), (column, dtype)
        elif column.startswith("x_"):
            assert column[2:3].isupper(), f"custom column {column} keeps FOCUS's x_ prefix"
        else:
            assert dtype == pl.Utf8, (column, dtype)


def check_rows(rows: list[dict[str, object]], month_start: datetime) -> None:
    """Every row against the rules: ``rows`` hold Decimal and UTC datetime values (parsed from
    the CSV's text or read from the Parquet file alike)."""
    month_end = (month_start + timedelta(days=32)).replace(day=1)
    for row in rows:
        where = f"row {row.get('x_EntryId')}"
        for column in NOT_NULL | ALSO_NOT_NULL:
            assert row[column] is not None, f"{column} is null in {where}"
        for column, value in row.items():
            assert value != "" and not (isinstance(value, str) and not value.strip()), (
                f"{column} is an empty string in {where} (FOCUS: null, never a placeholder)"
            )
            if column in DECIMAL_COLUMNS and value is not None:
                assert isinstance(value, Decimal) and value.is_finite(), (column, value)
            if column in DATETIME_COLUMNS:
                assert isinstance(value, datetime) and value.utcoffset() == timedelta(0)
        category = row["ChargeCategory"]
        assert category in CHARGE_CATEGORIES, category
        assert row["ChargeClass"] is None, "no row corrects an invoiced period"
        assert row["ServiceCategory"] in SERVICE_CATEGORIES
        assert row["ChargeFrequency"] in CHARGE_FREQUENCIES
        assert not (category == "Purchase" and row["ChargeFrequency"] == "Usage-Based")
        assert row["BillingCurrency"] in ISO_4217
        assert (row["BillingPeriodStart"], row["BillingPeriodEnd"]) == (month_start, month_end)
        start, end = row["ChargePeriodStart"], row["ChargePeriodEnd"]
        assert month_start <= start < end <= month_end, (start, end)  # type: ignore[operator]
        assert row["BillingAccountName"] is not None  # the provider names its accounts
        assert (row["SubAccountId"] is None) == (row["SubAccountName"] is None)
        _check_pricing(row, category)  # type: ignore[arg-type]
        if row["Tags"] is not None:
            tags = json.loads(row["Tags"])  # type: ignore[arg-type]
            assert isinstance(tags, dict) and tags
            assert all(isinstance(v, str | int | float | bool) for v in tags.values())


def _check_pricing(row: dict[str, object], category: str) -> None:
    quantity, unit = row["PricingQuantity"], row["PricingUnit"]
    assert (quantity is None) == (unit is None), "PricingUnit is null exactly when the quantity is"
    billed: Decimal = row["BilledCost"]  # type: ignore[assignment]
    effective: Decimal = row["EffectiveCost"]  # type: ignore[assignment]
    if category in ("Usage", "Purchase"):
        for column in (
            "PricingQuantity", "ListUnitPrice", "ContractedUnitPrice",
            "PricingCurrencyListUnitPrice", "PricingCurrencyContractedUnitPrice",
        ):  # fmt: skip
            assert row[column] is not None, f"{column} is null on a {category} row"
        for column in ("ListUnitPrice", "ContractedUnitPrice", "PricingCurrencyListUnitPrice"):
            assert row[column] >= 0  # type: ignore[operator]
        assert row["ListCost"] == row["ListUnitPrice"] * quantity  # type: ignore[operator]
        assert row["ContractedCost"] == row["ContractedUnitPrice"] * quantity  # type: ignore[operator]
    if category == "Purchase":
        # EffectiveCost-C-*: a prepaid purchase covering future charges has no effective cost,
        # in money or credits; BilledCost is what was paid for it.
        assert effective == 0 and row["PricingCurrencyEffectiveCost"] == 0
        assert billed == row["ListCost"]
    if category == "Usage":  # amortized: paid when the credits were bought
        assert billed == 0 and effective == row["ListCost"]
    if category in ("Credit", "Adjustment"):
        # BilledCost 0: no invoice moves; a free grant (Credit, no effective cost) keeps its
        # value in ListCost only, any other row's costs agree.
        assert billed == 0
        if effective != 0 or row["ContractedCost"] != 0:
            assert row["ListCost"] == row["ContractedCost"] == effective


FREE_TYPES = ("Promotion", "Bonus")  # the default free_credit_types


def check_reconciles_to_what_was_paid(
    dataset: pl.DataFrame, warehouse: Path, account: str, month: str, price: Decimal
) -> None:
    """FOCUS 1.2 for prepaid credits, per account and month, against the warehouse's own
    statement: sum(BilledCost) = credits purchased x price (free grants move no money), and
    sum(EffectiveCost) = the net drawdown x price, plus the free grants among those lines."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        line = dict(
            zip(
                ("debits", "credits", "refunds", "adjustments", "other", "hidden_movements"),
                con.execute(
                    "SELECT debits, credits, refunds, adjustments, other, hidden_movements "
                    "FROM monthly_statement WHERE account = ? AND strftime(month, '%Y-%m') = ?",
                    [account, month],
                ).fetchone()
                or (),
                strict=True,
            )
        )
        free_credit, free_other = con.execute(
            "SELECT coalesce(sum(amount) FILTER (WHERE category = 'credit'), 0), "
            "coalesce(sum(amount) FILTER (WHERE category <> 'credit'), 0) FROM statement_lines "
            "WHERE account = ? AND strftime(month, '%Y-%m') = ? AND list_contains(?, entry_type)",
            [account, month, list(FREE_TYPES)],
        ).fetchone() or (Decimal(0), Decimal(0))
    rows = dataset.filter(pl.col("SubAccountId") == account)
    billed = sum(rows["BilledCost"].to_list(), Decimal(0))
    effective = sum(rows["EffectiveCost"].to_list(), Decimal(0))
    drawn = -(
        line["debits"] + line["refunds"] + line["adjustments"] + line["other"]
        + line["hidden_movements"]
    )  # fmt: skip
    assert billed == (line["credits"] - free_credit) * price, (account, month)
    assert effective == (drawn + free_other) * price, (account, month)
