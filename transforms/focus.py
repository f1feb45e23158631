"""A month of a credit ledger as a FOCUS 1.2 dataset (FinOps Open Cost and Usage Specification).

One row per ledger entry, and one per hidden movement (a balance change no entry explains: an
``Adjustment``, since FOCUS has no truer place for it and leaving it out would leave the dataset
short of the statement). Credits are the platform's virtual currency: ``PricingCurrency`` and the
``PricingCurrency*`` columns are in credits, the money columns are credits times the account's
``credit_price`` in its ``billing_currency``, exact (DECIMAL, never float).

Credits are prepaid, so money moves when they are bought and is amortized as they are used, as
FOCUS 1.2 has it for prepaid commitments (docs/focus.md has the whole table):

- Purchase (grants, top-ups): what was paid, ``BilledCost`` = credits x price, ``EffectiveCost``
  0; ``ChargeFrequency`` ``Recurring`` for the plan's monthly grant, ``One-Time`` for a top-up.
- Usage (debits): ``BilledCost`` 0 (paid when the credits were bought), ``EffectiveCost`` the
  credits used, valued (``PricingCurrencyEffectiveCost`` in credits).
- Credit (refunds), Adjustment (adjustments, other types, hidden movements): ``BilledCost`` 0,
  ``EffectiveCost`` the balance change valued, negative when it raises the balance.
- Credits granted for free (promotions, bonuses: a configurable list of entry types): no money
  moves, ``BilledCost`` and ``EffectiveCost`` 0, their value in ``ListCost``.

So per account and month: ``sum(BilledCost)`` = credits purchased x price, and
``sum(EffectiveCost)`` = the month's net drawdown x price, ``-(debits + refunds + adjustments +
other + hidden_movements) * credit_price`` of ``monthly_statement``, plus the value of the free
grants among those lines (which move no money).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, localcontext

import polars as pl

from transforms.entry_type import Category

FOCUS_VERSION = "1.2"
PROVIDER = "Conversational-Agent Platform"
SERVICE_NAME = "Conversational agents"
SERVICE_CATEGORY = "AI and Machine Learning"
SERVICE_SUBCATEGORY = "Bots"
CREDITS = "Credits"  # the virtual currency, and the unit credits are priced in
TAG_PREFIX = "creditlens/"  # provider-defined tags carry a prefix (FOCUS Tags)
QUANTITY_SCALE = 6  # credits are DECIMAL(18,6) in the warehouse

# The project's entry-type categories (transforms/entry_type.py) as FOCUS charge categories.
CHARGE_CATEGORY: dict[Category, str] = {
    "debit": "Usage",
    "credit": "Purchase",
    "refund": "Credit",
    "adjustment": "Adjustment",
    "other": "Adjustment",
}
HIDDEN_CATEGORY = "Adjustment"
FREE_CATEGORY = "Credit"  # credits granted for free: a credit from the provider, no money

# The columns FOCUS 1.2 marks Mandatory: present in every dataset.
MANDATORY = (
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "ContractedCost",
    "EffectiveCost",
    "InvoiceIssuerName",
    "ListCost",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "ServiceCategory",
    "ServiceName",
)


@dataclass(frozen=True)
class Pricing:
    """An account's credit price (in ``currency``), its billing currency (ISO 4217), its
    ``BillingAccountId``, and the entry types it grants for free or as its plan's recurring
    grant (compared without case)."""

    price: Decimal
    currency: str
    account_id: str = ""
    free_types: frozenset[str] = frozenset()
    recurring_types: frozenset[str] = frozenset()


def money_scale(pricing: Mapping[str, Pricing]) -> int:
    """Decimal places of the money columns: credits' 6 plus the longest price's, so every
    product is exact in one DECIMAL(38, scale) column whatever account it belongs to."""
    places = [max(0, -int(p.price.as_tuple().exponent)) for p in pricing.values()]
    return QUANTITY_SCALE + max(places, default=0)


def focus_schema(scale: int) -> dict[str, pl.DataType]:
    """Every column the export writes, in order, with its type: Decimal for FOCUS's Decimal,
    UTC datetimes for Date/Time, strings (Tags a JSON object) for the rest."""
    money = pl.Decimal(38, scale)
    quantity = pl.Decimal(38, QUANTITY_SCALE)
    when = pl.Datetime("us", "UTC")
    text = pl.Utf8()
    names: dict[str, pl.DataType] = {
        "BilledCost": money,
        "BillingAccountId": text,
        "BillingAccountName": text,
        "BillingCurrency": text,
        "BillingPeriodEnd": when,
        "BillingPeriodStart": when,
        "ChargeCategory": text,
        "ChargeClass": text,
        "ChargeDescription": text,
        "ChargeFrequency": text,
        "ChargePeriodEnd": when,
        "ChargePeriodStart": when,
        "ContractedCost": money,
        "ContractedUnitPrice": money,
        "EffectiveCost": money,
        "InvoiceIssuerName": text,
        "ListCost": money,
        "ListUnitPrice": money,
        "PricingCurrency": text,
        "PricingCurrencyContractedUnitPrice": money,
        "PricingCurrencyEffectiveCost": quantity,
        "PricingCurrencyListUnitPrice": money,
        "PricingQuantity": quantity,
        "PricingUnit": text,
        "ProviderName": text,
        "PublisherName": text,
        "ServiceCategory": text,
        "ServiceName": text,
        "ServiceSubcategory": text,
        "SubAccountId": text,
        "SubAccountName": text,
        "Tags": text,
        "x_EntryId": text,
        "x_EntryType": text,
        "x_HiddenMovement": pl.Boolean(),
    }
    return names


def month_bounds(month: date) -> tuple[datetime, datetime]:
    """The billing period: the UTC month, start inclusive, end exclusive."""
    following = date(month.year + month.month // 12, month.month % 12 + 1, 1)
    return (
        datetime(month.year, month.month, 1, tzinfo=UTC),
        datetime(following.year, following.month, 1, tzinfo=UTC),
    )


def _tags(frame: pl.DataFrame) -> pl.Series:
    """Agent, campaign (and its name) and channel as one JSON object per row, keys prefixed as
    FOCUS asks of provider-defined tags; keys without a value are left out, and a row with none
    has no tags (null), never an empty string."""
    keys = ("agent", "campaign", "campaign_name", "channel")
    columns = [frame[f"tag_{key}"].to_list() for key in keys]
    values = []
    for row in zip(*columns, strict=True):
        tags = {f"{TAG_PREFIX}{k}": v for k, v in zip(keys, row, strict=True) if v is not None}
        values.append(json.dumps(tags, ensure_ascii=False, sort_keys=True) if tags else None)
    return pl.Series("Tags", values, dtype=pl.Utf8)


def hidden_movement_id(account: str, anchor: str, gap: Decimal) -> str:
    """A hidden movement's ``x_EntryId``: the entry it follows (or precedes, before the first)
    and its gap, never its break id, which changes when later entries place a movement after
    the last entry between two: the same movement keeps its id in every export."""
    text = f"{account}\0{anchor}\0{gap.normalize()}"
    return "hm-" + hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _movements(entries: pl.DataFrame, hidden: pl.DataFrame, scale: int) -> pl.DataFrame:
    """Entries and hidden movements in one shape: the balance effect, the UTC day, the text."""
    effect = pl.Decimal(38, scale)
    category = pl.col("category").replace_strict(CHARGE_CATEGORY, default=HIDDEN_CATEGORY)
    described = pl.col("description").str.strip_chars()
    from_entries = entries.select(
        pl.col("account"),
        pl.col("entry_id").alias("x_EntryId"),
        pl.col("entry_type").alias("x_EntryType"),
        pl.lit(False).alias("x_HiddenMovement"),
        category.cast(pl.Utf8).alias("ChargeCategory"),
        pl.col("created_at").dt.convert_time_zone("UTC").dt.date().alias("day"),
        pl.col("signed_amount").cast(effect).alias("effect"),
        pl.when(described.str.len_chars() > 0)
        .then(pl.col("description"))
        .otherwise(pl.col("entry_type"))
        .alias("ChargeDescription"),
        pl.col("agent_id").alias("tag_agent"),
        pl.col("campaign_id").alias("tag_campaign"),
        pl.col("campaign_name").alias("tag_campaign_name"),
        pl.col("channel").alias("tag_channel"),
    )
    none = pl.lit(None, dtype=pl.Utf8)
    ids = [
        hidden_movement_id(a, anchor, Decimal(gap))
        for a, anchor, gap in zip(
            hidden["account"].to_list(), hidden["anchor"].to_list(), hidden["gap"].to_list(),
            strict=True,
        )
    ]  # fmt: skip
    from_hidden = hidden.with_columns(pl.Series("stable_id", ids, dtype=pl.Utf8)).select(
        pl.col("account"),
        pl.col("stable_id").alias("x_EntryId"),
        none.alias("x_EntryType"),
        pl.lit(True).alias("x_HiddenMovement"),
        pl.lit(HIDDEN_CATEGORY).alias("ChargeCategory"),
        pl.col("observed_on").alias("day"),
        pl.col("gap").cast(effect).alias("effect"),
        pl.concat_str(pl.lit("Hidden movement (no ledger entry): "), pl.col("detail"))
        .fill_null("Hidden movement (no ledger entry)")
        .alias("ChargeDescription"),
        *(none.alias(f"tag_{k}") for k in ("agent", "campaign", "campaign_name", "channel")),
    )
    # Entries keep their chain order, each day's hidden movements after its entries.
    return pl.concat([from_entries, from_hidden]).sort(["account", "day"], maintain_order=True)


def _times_price(credits: pl.Series, prices: pl.Series, scale: int) -> pl.Series:
    """Credits times their account's price, exact. Not polars' Decimal product: at 38 digits
    its intermediate overflows without a word and rounds the last places; Python's Decimal,
    given the digits, cannot (credit_price is bounded so every product fits DECIMAL(38, scale),
    pipelines/config/currencies.py)."""
    step = Decimal(1).scaleb(-scale)  # exact: a product has at most 6 + the price's places
    with localcontext() as exact:
        exact.prec = 80
        values = [
            None if c is None or p is None else (c * p).quantize(step)
            for c, p in zip(credits.to_list(), prices.to_list(), strict=True)
        ]
    return pl.Series("value", values, dtype=pl.Decimal(38, scale))


def focus_rows(
    entries: pl.DataFrame,
    hidden: pl.DataFrame,
    month: date,
    pricing: Mapping[str, Pricing],
) -> pl.DataFrame:
    """The FOCUS dataset of ``month`` (its first day) from ``focus_read.read_month``'s frames;
    ``pricing`` must name every account present (the caller refuses the export otherwise)."""
    scale = money_scale(pricing)
    schema = focus_schema(scale)
    money, quantity = pl.Decimal(38, scale), pl.Decimal(38, QUANTITY_SCALE)
    prices = pl.DataFrame(
        {
            "account": list(pricing),
            "price": [p.price for p in pricing.values()],
            "currency": [p.currency for p in pricing.values()],
            "account_id": [p.account_id or a for a, p in pricing.items()],
        },
        schema={"account": pl.Utf8, "price": money, "currency": pl.Utf8, "account_id": pl.Utf8},
    )
    rows = _movements(entries, hidden, scale).join(
        prices, on="account", how="left", maintain_order="left"
    )
    rows = rows.with_columns(
        free=_of_types(rows, {a: p.free_types for a, p in pricing.items()}),
        recurring=_of_types(rows, {a: p.recurring_types for a, p in pricing.items()}),
    )
    start, end = month_bounds(month)
    free = pl.col("free")
    category = pl.when(free).then(pl.lit(FREE_CATEGORY)).otherwise(pl.col("ChargeCategory"))
    rows = rows.with_columns(ChargeCategory=category)
    usage = (pl.col("ChargeCategory") == "Usage") & ~free
    purchase = (pl.col("ChargeCategory") == "Purchase") & ~free
    priced = usage | purchase
    spent = -pl.col("effect")  # credits a row costs: positive when the balance went down
    quantity_of = pl.when(purchase).then(pl.col("effect")).when(usage).then(spent)
    received = pl.when(purchase | free).then(pl.col("effect")).otherwise(spent)
    rows = rows.with_columns(value=_times_price(rows.select(received)[:, 0], rows["price"], scale))
    value, zero = pl.col("value"), pl.lit(Decimal(0)).cast(money)
    billed = pl.when(purchase).then(value).otherwise(zero)
    effective = pl.when(purchase | free).then(zero).otherwise(value)
    unit_price = pl.when(priced).then(pl.col("price"))
    day_start = pl.col("day").cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    # In the pricing currency: credits are bought at the price, and used one credit per credit.
    per_credit = pl.when(purchase).then(pl.col("price")).when(usage).then(pl.lit(Decimal(1)))
    frequency = (
        pl.when(usage)
        .then(pl.lit("Usage-Based"))
        .when(purchase & pl.col("recurring"))
        .then(pl.lit("Recurring"))
        .otherwise(pl.lit("One-Time"))
    )
    text = {
        "BillingAccountId": pl.col("account_id"),
        "BillingAccountName": pl.col("account"),
        "BillingCurrency": pl.col("currency"),
        "ChargeClass": pl.lit(None, dtype=pl.Utf8),
        "ChargeFrequency": frequency,
        "InvoiceIssuerName": pl.lit(PROVIDER),
        "PricingCurrency": pl.when(purchase).then(pl.col("currency")).otherwise(pl.lit(CREDITS)),
        "PricingUnit": pl.when(priced).then(pl.lit(CREDITS)),
        "ProviderName": pl.lit(PROVIDER),
        "PublisherName": pl.lit(PROVIDER),
        "ServiceCategory": pl.lit(SERVICE_CATEGORY),
        "ServiceName": pl.lit(SERVICE_NAME),
        "ServiceSubcategory": pl.lit(SERVICE_SUBCATEGORY),
        "SubAccountId": pl.col("account"),
        "SubAccountName": pl.col("account"),
    }
    computed = {
        "BilledCost": billed,
        "BillingPeriodEnd": pl.lit(end),
        "BillingPeriodStart": pl.lit(start),
        "ChargePeriodEnd": day_start + pl.duration(days=1),
        "ChargePeriodStart": day_start,
        "ContractedCost": pl.when(free).then(zero).otherwise(value),
        "ContractedUnitPrice": unit_price,
        "EffectiveCost": effective,
        "ListCost": value,
        "ListUnitPrice": unit_price,
        "PricingCurrencyContractedUnitPrice": per_credit,
        "PricingCurrencyEffectiveCost": pl.when(purchase | free)
        .then(pl.lit(Decimal(0)).cast(quantity))
        .otherwise(spent),
        "PricingCurrencyListUnitPrice": per_credit,
        "PricingQuantity": quantity_of,
        **text,
    }
    built = rows.with_columns(
        **{name: expr.cast(schema[name]) for name, expr in computed.items()},
        Tags=_tags(rows),
    )
    return built.select([pl.col(name).cast(dtype) for name, dtype in schema.items()])


def _of_types(rows: pl.DataFrame, types: Mapping[str, frozenset[str]]) -> pl.Series:
    """Whether each row's entry type is one of its account's ``types`` (without case)."""
    lowered = {a: {t.lower() for t in names} for a, names in types.items()}
    flags = [
        t is not None and t.lower() in lowered.get(a, set())
        for a, t in zip(rows["account"].to_list(), rows["x_EntryType"].to_list(), strict=True)
    ]
    return pl.Series(flags, dtype=pl.Boolean)


def as_csv_text(dataset: pl.DataFrame) -> pl.DataFrame:
    """The dataset as CSV cells: datetimes as ISO 8601 UTC (``2026-10-01T00:00:00Z``, FOCUS's
    Date/Time format), decimals as their exact text, nulls as empty cells."""
    return dataset.with_columns(
        pl.col(pl.Datetime).dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
        pl.col(pl.Boolean).replace_strict({True: "true", False: "false"}, return_dtype=pl.Utf8),
    )


def month_label(month: date) -> str:
    return f"{month.year:04d}-{month.month:02d}"
