"""Response models. Unknown fields are kept (extra="allow"): the platform may add fields, and an
analyst would rather see them than lose them. Money is Decimal, parsed from the JSON text."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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

    balance: Decimal | None
    credits_used: Decimal | None = Field(default=None, alias="creditsUsed")
    credits_included: Decimal | None = Field(default=None, alias="creditsIncluded")
    period_start: datetime | None = Field(default=None, alias="periodStart")
    period_end: datetime | None = Field(default=None, alias="periodEnd")
    as_of: datetime | None = Field(default=None, alias="asOf")


class BreakdownItem(_Open):
    agent_id: str | None = Field(default=None, alias="agentId")
    campaign_id: str | None = Field(default=None, alias="campaignId")
    channel: str | None = None
    credits: Decimal


class Breakdown(_Open):
    period_start: datetime | None = Field(default=None, alias="periodStart")
    period_end: datetime | None = Field(default=None, alias="periodEnd")
    items: list[BreakdownItem]


class Subscription(_Open):
    """``plan`` and ``status`` must be present: without them the payload is not a subscription."""

    plan: str | None
    status: str | None
    features: list[str] | None = None
    limits: dict[str, Any] | None = None
    current_period_start: datetime | None = Field(default=None, alias="currentPeriodStart")
    current_period_end: datetime | None = Field(default=None, alias="currentPeriodEnd")


class Campaign(_Open):
    id: str
    name: str | None = None
