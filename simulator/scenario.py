"""What a simulated platform looks like: companies, their history, wire variants and faults.

Every choice the spec leaves "not shown" (docs/contracts.md) is an option here, so a test can serve
each variant the pipeline must cope with. Presets live in `presets.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from simulator.network import NetworkSpec

DEFAULT_CHANNELS = ["Phone", "Chat", "SMS", "WhatsApp", "Email"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlanSpec(_Model):
    monthly_credits: Decimal = Decimal(10000)
    agents: int = 20
    concurrent_calls: int = 10
    features: list[str] = Field(default_factory=lambda: ["PhoneAgents", "ChatAgents"])


DEFAULT_PLANS: dict[str, PlanSpec] = {
    "Starter": PlanSpec(
        monthly_credits=Decimal(2000), agents=5, concurrent_calls=2, features=["ChatAgents"]
    ),
    "Growth": PlanSpec(),
    "Scale": PlanSpec(
        monthly_credits=Decimal(50000),
        agents=100,
        concurrent_calls=50,
        features=["PhoneAgents", "ChatAgents", "KnowledgeBase", "AgentTests"],
    ),
}


class KeySpec(_Model):
    """An API key of a company. Without `secret`, one is derived from (seed, company, label)."""

    label: str
    scope: Literal["full", "campaigns"] = "full"
    revoked: bool = False
    secret: str | None = Field(default=None, repr=False)


def default_keys() -> list[KeySpec]:
    return [
        KeySpec(label="primary"),
        KeySpec(label="campaigns-only", scope="campaigns"),
        KeySpec(label="old-revoked", revoked=True),
    ]


class HiddenMovementSpec(_Model):
    """A balance change with no ledger entry. Exactly one placement is given.

    after_index: after the entry at this chronological position (0-based).
    at: after the last entry with createdAt <= at.
    after_day: between the last entry of that UTC day and the first of a later day.
    day_boundary_days_ago: after_day = (the simulator's initial now's day) - n.
    tie_group: between the first and second entries of the n-th tie group (0-based); where
        another movement lands in that same gap, the next tie group instead, so two
        placements never merge into one gap (the history is drawn back from now, so which
        entries tie changes with the day).
    at_end: after the last entry at the simulator's initial now.
    """

    amount: Decimal
    after_index: int | None = None
    at: datetime | None = None
    after_day: date | None = None
    day_boundary_days_ago: int | None = None
    tie_group: int | None = None
    at_end: bool = False

    @model_validator(mode="after")
    def _one_placement(self) -> Self:
        given = [
            self.after_index is not None,
            self.at is not None,
            self.after_day is not None,
            self.day_boundary_days_ago is not None,
            self.tie_group is not None,
            self.at_end,
        ]
        if sum(given) != 1:
            raise ValueError("a hidden movement needs exactly one placement")
        if self.after_index is not None and self.after_index < 0:
            raise ValueError("after_index must be >= 0")
        if self.tie_group is not None and self.tie_group < 0:
            raise ValueError("tie_group must be >= 0")
        return self


class SpendSpikeSpec(_Model):
    """One agent's usage multiplied on one day, and at least ``factor`` times an average agent's
    usage that day: the spend anomaly alerts look for, on any date (simulator/README.md)."""

    days_ago: int  # counted back from the simulator's initial now's day; 0 is that day
    factor: float = Field(default=6.0, gt=0)
    agent: int = Field(default=0, ge=0)  # index into the company's agents


class TopUpSpec(_Model):
    """A credit top-up at noon UTC of a day (negative ``days_ago``: a day still to come, seen
    once the clock reaches it): the balance a low-balance alert recovers with."""

    days_ago: int
    amount: Decimal = Field(gt=0)


class BreakdownMismatchSpec(_Model):
    """Makes /Consumption/breakdown disagree with the ledger by `delta` for one item.

    The item is the explicit (agent_id, campaign_id, channel) when given, else the `item`-th of
    the expected items sorted by (agentId, campaignId, channel).
    """

    delta: Decimal
    item: int = 0
    agent_id: str | None = None
    campaign_id: str | None = None
    channel: str | None = None


class SubscriptionChange(_Model):
    """From `at` (or `offset_days` after the simulator's initial now) on, the plan/status change."""

    at: datetime | None = None
    offset_days: float | None = None
    plan: str | None = None
    status: str | None = None

    @model_validator(mode="after")
    def _one_time(self) -> Self:
        if (self.at is None) == (self.offset_days is None):
            raise ValueError("a subscription change needs exactly one of at / offset_days")
        return self


class CompanySpec(_Model):
    """A simulated company: how long and busy its history is, its plan, and what it hides."""

    name: str
    history_days: int = Field(default=730, ge=1)
    entries_per_day: float = Field(default=200.0, ge=0)
    agents: int = Field(default=6, ge=1)
    campaigns: int = Field(default=5, ge=1)
    campaign_names: list[str] | None = None
    channels: list[str] = Field(default_factory=lambda: list(DEFAULT_CHANNELS))
    plan: str = "Growth"
    status: str = "Active"
    subscription_changes: list[SubscriptionChange] = Field(default_factory=list)
    # None (the default): a faithful start. The ledger starts from 0 and its first entry is a
    # PlanGrant of the plan's monthly credits at the first active day's 00:00:00.000Z (on a
    # month's 1st, the monthly grant already there), as a real platform records a company's first
    # credits, so the first entry's balance before it is exactly 0 (a subscription that grants
    # nothing that day starts with no credits at all). A Decimal: the ledger starts at that
    # balance with no entry explaining it, which is how a test asks for a movement before the
    # first entry; when non-zero, the ground truth lists it as a hidden movement at position -1.
    opening_balance: Decimal | None = None
    # (from_days_ago, until_days_ago) ranges, inclusive, counted back from the day of the
    # simulator's initial now (negative: days still to come, reached as the clock moves): days
    # with no entries at all (no usage, no monthly grant), a dormant stretch after which
    # activity resumes from the balance it left off at.
    quiet_days: list[tuple[int, int]] = Field(default_factory=list)
    # True: each quiet stretch is entered at a zero balance and left from zero, as a company
    # whose trial credits expired, then, after its silence, subscribed anew: the last day before
    # the stretch ends with an Expiry of every credit left, and the first day after it opens with
    # the plan's grant at 00:00:00.000Z, its balance before exactly 0.
    quiet_at_zero: bool = False
    tie_rate: float = Field(default=0.03, ge=0, le=1)
    identical_pairs_per_day: float = Field(default=0.03, ge=0)
    missing_description_rate: float = Field(default=0.04, ge=0, le=1)
    zero_usage_rate: float = Field(default=0.01, ge=0, le=1)
    refund_rate: float = Field(default=0.012, ge=0, le=1)
    adjustment_rate: float = Field(default=0.004, ge=0, le=1)
    expiry_probability: float = Field(default=0.35, ge=0, le=1)
    rare_types: dict[str, Literal["credit", "debit"]] = Field(
        default_factory=lambda: {"Promotion": "credit"}
    )
    rare_type_rate: float = Field(default=0.0005, ge=0, le=1)
    hidden_movements: list[HiddenMovementSpec] = Field(default_factory=list)
    breakdown_mismatches: list[BreakdownMismatchSpec] = Field(default_factory=list)
    spend_spikes: list[SpendSpikeSpec] = Field(default_factory=list)
    top_ups: list[TopUpSpec] = Field(default_factory=list)
    # False: no automatic top-up when the balance runs low: a company burning toward zero.
    auto_top_up: bool = True
    keys: list[KeySpec] = Field(default_factory=default_keys)

    @model_validator(mode="after")
    def _quiet_ranges(self) -> Self:
        for start, end in self.quiet_days:
            if not end <= start:
                raise ValueError(
                    "quiet_days ranges are (from_days_ago, until_days_ago), from >= until"
                )
        return self


class SchemaDrift(_Model):
    """Deterministic drift of the wire shape: what a newer platform version might send."""

    extra_entry_fields: dict[str, Any] = Field(default_factory=dict)
    extra_envelope_fields: dict[str, Any] = Field(default_factory=dict)
    omit_nulls: bool = False
    null_descriptions: bool = False


FaultKind = Literal[
    "429", "500", "502", "503", "timeout", "reset", "truncated", "malformed", "drift", "body"
]


class FaultSpec(_Model):
    """One scripted fault, or the template of rate-mode faults."""

    kind: FaultKind
    path: str | None = None
    retry_after: int = 1
    delay: float = 5.0
    status: int = 200
    body: Any = None
    content_type: str = "application/json"
    drift_entries: int = 1


class FaultRates(_Model):
    rate: float = Field(default=0.0, ge=0, le=1)
    kinds: list[FaultKind] = Field(default_factory=lambda: ["429", "500", "502", "503"])
    path: str | None = None
    seed: int = 0
    retry_after: int = 1
    delay: float = 5.0


class FaultsConfig(_Model):
    rates: FaultRates = Field(default_factory=FaultRates)
    script: list[FaultSpec] = Field(default_factory=list)


class Scenario(_Model):
    name: str = "custom"
    companies: list[CompanySpec]
    now: datetime | None = None
    range_params: tuple[str, str] = ("startDate", "endDate")
    range_format: Literal["date", "datetime"] = "date"
    sign_convention: Literal["signed", "unsigned"] = "signed"
    entry_order: Literal["newest_first", "oldest_first"] = "newest_first"
    summary_fields: dict[str, str] = Field(default_factory=dict)
    drift: SchemaDrift = Field(default_factory=SchemaDrift)
    plans: dict[str, PlanSpec] = Field(default_factory=lambda: dict(DEFAULT_PLANS))
    faults: FaultsConfig = Field(default_factory=FaultsConfig)
    network: NetworkSpec = Field(default_factory=NetworkSpec)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        names = [c.name for c in self.companies]
        if not names or len(set(names)) != len(names):
            raise ValueError("companies must be non-empty with unique names")
        if self.range_params[0] == self.range_params[1]:
            raise ValueError("range_params must be two different names")
        for company in self.companies:
            plans = [company.plan] + [c.plan for c in company.subscription_changes if c.plan]
            for plan in plans:
                if plan not in self.plans:
                    raise ValueError(f"company {company.name}: unknown plan {plan}")
        return self

    @classmethod
    def named(cls, name: str, **overrides: Any) -> Scenario:
        if name not in PRESETS:
            raise KeyError(f"unknown scenario {name!r}; presets: {', '.join(sorted(PRESETS))}")
        return PRESETS[name]().with_overrides(**overrides)

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> Scenario:
        """YAML or JSON; a file may start from a preset with `preset: NAME`."""
        text = Path(path).read_text(encoding="utf-8")
        raw = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: a scenario file must hold a mapping")
        preset = raw.pop("preset", None)
        if preset is not None:
            return cls.named(preset, **raw).with_overrides(**overrides)
        return cls.model_validate({**raw, **overrides})

    @classmethod
    def resolve(cls, name_or_path: str) -> Scenario:
        """A preset NAME or a FILE path, as the CLI takes it."""
        if name_or_path in PRESETS:
            return cls.named(name_or_path)
        if not Path(name_or_path).is_file():
            names = ", ".join(sorted(PRESETS))
            raise ValueError(f"{name_or_path!r} is neither a preset ({names}) nor a file")
        return cls.load(name_or_path)

    def with_overrides(self, **overrides: Any) -> Scenario:
        if not overrides:
            return self
        return type(self).model_validate({**self.model_dump(), **overrides})

    def with_company(self, name: str, **overrides: Any) -> Scenario:
        """Changes one company's options, e.g. `with_company("acme", hidden_movements=[...])`."""
        companies = []
        found = False
        for company in self.companies:
            if company.name == name:
                found = True
                company = CompanySpec.model_validate({**company.model_dump(), **overrides})
            companies.append(company)
        if not found:
            raise KeyError(f"no company {name!r} in scenario {self.name!r}")
        return self.with_overrides(companies=companies)

    def company(self, name: str) -> CompanySpec:
        for company in self.companies:
            if company.name == name:
                return company
        raise KeyError(f"no company {name!r} in scenario {self.name!r}")


# The named scenarios (simulator/presets.py, which the package imports, fills it): a registry here
# rather than an import of presets, which builds its scenarios from this module's classes.
PRESETS: dict[str, Callable[[], Scenario]] = {}
