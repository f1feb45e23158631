"""What an account's credits are worth: the price of one credit and the currency it is billed in.

The platform's API gives credits, never money; FOCUS (docs/focus.md) needs a national currency
and a cost. Both come from the account's settings, checked here so a typo (``EU``, ``euro``,
``0,0125``) is one line when the settings are read, not a wrong dataset at export time.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import BeforeValidator

# ISO 4217 alphabetic codes of national currencies in use (no funds codes, precious metals or
# testing codes: FOCUS's BillingCurrency "MUST be expressed in national currency").
ISO_4217 = frozenset(
    [
        "AED",
        "AFN",
        "ALL",
        "AMD",
        "ANG",
        "AOA",
        "ARS",
        "AUD",
        "AWG",
        "AZN",
        "BAM",
        "BBD",
        "BDT",
        "BGN",
        "BHD",
        "BIF",
        "BMD",
        "BND",
        "BOB",
        "BRL",
        "BSD",
        "BTN",
        "BWP",
        "BYN",
        "BZD",
        "CAD",
        "CDF",
        "CHF",
        "CLP",
        "CNY",
        "COP",
        "CRC",
        "CUP",
        "CVE",
        "CZK",
        "DJF",
        "DKK",
        "DOP",
        "DZD",
        "EGP",
        "ERN",
        "ETB",
        "EUR",
        "FJD",
        "FKP",
        "GBP",
        "GEL",
        "GHS",
        "GIP",
        "GMD",
        "GNF",
        "GTQ",
        "GYD",
        "HKD",
        "HNL",
        "HTG",
        "HUF",
        "IDR",
        "ILS",
        "INR",
        "IQD",
        "IRR",
        "ISK",
        "JMD",
        "JOD",
        "JPY",
        "KES",
        "KGS",
        "KHR",
        "KMF",
        "KPW",
        "KRW",
        "KWD",
        "KYD",
        "KZT",
        "LAK",
        "LBP",
        "LKR",
        "LRD",
        "LSL",
        "LYD",
        "MAD",
        "MDL",
        "MGA",
        "MKD",
        "MMK",
        "MNT",
        "MOP",
        "MRU",
        "MUR",
        "MVR",
        "MWK",
        "MXN",
        "MYR",
        "MZN",
        "NAD",
        "NGN",
        "NIO",
        "NOK",
        "NPR",
        "NZD",
        "OMR",
        "PAB",
        "PEN",
        "PGK",
        "PHP",
        "PKR",
        "PLN",
        "PYG",
        "QAR",
        "RON",
        "RSD",
        "RUB",
        "RWF",
        "SAR",
        "SBD",
        "SCR",
        "SDG",
        "SEK",
        "SGD",
        "SHP",
        "SLE",
        "SOS",
        "SRD",
        "SSP",
        "STN",
        "SVC",
        "SYP",
        "SZL",
        "THB",
        "TJS",
        "TMT",
        "TND",
        "TOP",
        "TRY",
        "TTD",
        "TWD",
        "TZS",
        "UAH",
        "UGX",
        "USD",
        "UYU",
        "UZS",
        "VED",
        "VES",
        "VND",
        "VUV",
        "WST",
        "XAF",
        "XCD",
        "XCG",
        "XOF",
        "XPF",
        "YER",
        "ZAR",
        "ZMW",
        "ZWG",
    ]
)

# Decimal places a credit's price may have, and the bound it stays under: costs are credits
# (DECIMAL(18,6): under 10**12) times the price, kept exact in a DECIMAL(38, 6 + places) column,
# which leaves 20 digits before the point for any price under 10**8.
MAX_PRICE_PLACES = 12
PRICE_BOUND = Decimal(10) ** 8


def price_places(price: Decimal) -> int:
    """Decimal places of ``price`` as written (``0.0125``: 4; ``2``: 0)."""
    exponent = price.as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _credit_price(value: Any) -> Any:
    """A decimal > 0 read from its text: a TOML float is read by its shortest decimal text
    (``0.0125`` stays 0.0125), never through binary arithmetic."""
    if value is None or isinstance(value, Decimal):
        price = value
    else:
        try:
            price = Decimal(str(value).strip())
        except InvalidOperation:
            price = None
    if price is None or not price.is_finite() or price <= 0:
        raise ValueError("must be a decimal number > 0 (the price of one credit), e.g. 0.0125")
    if price >= PRICE_BOUND:
        raise ValueError(f"must be less than {PRICE_BOUND:f}")
    if price_places(price) > MAX_PRICE_PLACES:
        raise ValueError(f"must have at most {MAX_PRICE_PLACES} decimal places")
    return price


def _billing_currency(value: Any) -> Any:
    code = str(value).strip().upper() if isinstance(value, str) else value
    if code not in ISO_4217:
        raise ValueError("must be an ISO 4217 currency code such as USD or EUR")
    return code


CreditPrice = Annotated[Decimal, BeforeValidator(_credit_price)]
BillingCurrency = Annotated[str, BeforeValidator(_billing_currency)]
