"""Response models. Unknown fields are kept (extra="allow"): the platform may add fields, and an
analyst would rather see them than lose them.

Money is ``Money``: the wire grammar and the DECIMAL(18,6) bound of pipelines/api/money.py, the
same rule as a ledger entry's, so a snapshot cannot land a value the ledger would refuse
(Arabic-Indic digits or ``"1_000"``, which ``Decimal`` reads) or one DuckDB would round or
refuse. Text stored in a column is ``Text``: a lone surrogate (valid JSON) is not Unicode, and
would fail the landing.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from pipelines.api.money import SNAPSHOT_INTEGER_DIGITS, read_money


def _money(value: Any) -> Any:
    """A JSON number (its exact text, or a Decimal or int a reader made of it), or a string
    holding one, read by the one money rule; anything else is refused with its reason. The
    client never makes a float; one a Python caller hands over is read as its shortest repr, as
    it was written."""
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    read = read_money(str(value), SNAPSHOT_INTEGER_DIGITS)
    if isinstance(read, Decimal):
        return read
    shown = str(value) if len(str(value)) <= 40 else str(value)[:37] + "..."
    raise ValueError(f"{shown!r} {read.reason}")


def _unicode(value: str) -> str:
    try:
        value.encode()
    except UnicodeEncodeError:
        raise ValueError("is not valid Unicode (it holds an unpaired surrogate)") from None
    return value


Money = Annotated[Decimal, BeforeValidator(_money)]
Text = Annotated[str, AfterValidator(_unicode)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class LedgerEnvelope(_Open):
    """The envelope of one ledger page; entries stay raw dicts until column-wise validation."""

    data: list[Any]
    total: int = Field(ge=0)
    page_number: int = Field(alias="pageNumber", ge=1)
    page_size: int = Field(alias="pageSize", ge=1)


class ConsumptionSummary(_Open):
    """``balance`` must be present (it may be null): without it the payload is not a summary."""

    balance: Money | None
    credits_used: Money | None = Field(default=None, alias="creditsUsed")
    credits_included: Money | None = Field(default=None, alias="creditsIncluded")
    period_start: datetime | None = Field(default=None, alias="periodStart")
    period_end: datetime | None = Field(default=None, alias="periodEnd")
    as_of: datetime | None = Field(default=None, alias="asOf")


class BreakdownItem(_Open):
    agent_id: Text | None = Field(default=None, alias="agentId")
    campaign_id: Text | None = Field(default=None, alias="campaignId")
    channel: Text | None = None
    credits: Money


class Breakdown(_Open):
    period_start: datetime | None = Field(default=None, alias="periodStart")
    period_end: datetime | None = Field(default=None, alias="periodEnd")
    items: list[BreakdownItem]


class Subscription(_Open):
    """``plan`` and ``status`` must be present: without them the payload is not a subscription."""

    plan: Text | None
    status: Text | None
    features: list[Text] | None = None
    limits: dict[str, Any] | None = None
    current_period_start: datetime | None = Field(default=None, alias="currentPeriodStart")
    current_period_end: datetime | None = Field(default=None, alias="currentPeriodEnd")


class Campaign(_Open):
    id: Text
    name: Text | None = None
