"""What a report is made of: small, already-aggregated facts read from the warehouse.

Everything here has one row per day, month, break, snapshot or dimension value, never one per
ledger entry, which is what keeps the site's size and build time independent of ledger volume.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import polars as pl

from transforms.aggregate import STATEMENT_MONEY_COLUMNS

STATEMENT_LINES: tuple[tuple[str, str], ...] = (
    ("opening", "Opening balance"),
    ("debits", "Debits (usage)"),
    ("credits", "Credits (grants, top-ups)"),
    ("refunds", "Refunds"),
    ("adjustments", "Adjustments"),
    ("other", "Other movements"),
    ("hidden_movements", "Hidden movements (not explained by any entry)"),
    ("closing", "Closing balance"),
)
# The statement's columns are defined once, with the rule that fills them (transforms/aggregate).
MOVEMENTS: tuple[str, ...] = STATEMENT_MONEY_COLUMNS[1:-1]
DIMENSIONS: tuple[str, ...] = ("agent_id", "campaign_id", "channel")
DIMENSION_NAMES = {"agent_id": "agent", "campaign_id": "campaign", "channel": "channel"}


@dataclass(frozen=True)
class Statement:
    """One month of finance's statement; ``entries == 0`` for a month with no entries at all."""

    month: date
    opening: Decimal
    debits: Decimal
    credits: Decimal
    refunds: Decimal
    adjustments: Decimal
    other: Decimal
    hidden_movements: Decimal
    closing: Decimal
    entries: int

    def figure(self, name: str) -> Decimal:
        value = getattr(self, name)
        assert isinstance(value, Decimal)
        return value

    @property
    def movements(self) -> Decimal:
        return sum((self.figure(m) for m in MOVEMENTS), Decimal(0))

    @property
    def balances(self) -> bool:
        """opening + every movement = closing, exactly."""
        return self.opening + self.movements == self.closing


@dataclass(frozen=True)
class Break:
    kind: str
    break_start: datetime | None
    break_end: datetime | None
    expected: Decimal | None
    observed: Decimal | None
    gap: Decimal | None
    agent_id: str | None
    campaign_id: str | None
    channel: str | None
    ambiguous: bool | None
    detail: str | None
    checked_at: datetime


@dataclass(frozen=True)
class ReconciliationRun:
    checked_at: datetime
    sign_convention: str
    sign_inferred: bool
    pairs_explained_signed: int | None
    pairs_explained_unsigned: int | None
    tolerance: Decimal
    entries: int
    continuity_breaks: int
    ambiguous_ties: int
    summary_status: str | None
    summary_message: str | None
    breakdown_status: str | None
    breakdown_message: str | None


@dataclass(frozen=True)
class SubscriptionView:
    """The latest /Subscription snapshot as the report shows it, not the API's own shape."""

    fetched_at: datetime
    plan: str | None
    status: str | None
    features: list[Any] | None
    limits: dict[str, Any] | None
    period_start: datetime | None
    period_end: datetime | None


@dataclass(frozen=True)
class ConsumptionSnapshot:
    fetched_at: datetime
    balance: Decimal | None
    credits_used: Decimal | None
    credits_included: Decimal | None
    period_start: datetime | None
    period_end: datetime | None


@dataclass(frozen=True)
class Usage:
    """Consumption of one dimension value (or of the account) in one day or month.

    ``consumption`` is the gross magnitude of debit-category entries (what the platform's
    breakdown reports), ``refunds`` the refunds tied to the same value, ``net`` their difference.
    """

    period: date
    consumption: Decimal
    refunds: Decimal
    net: Decimal
    entries: int


@dataclass
class DimensionValue:
    value: str | None
    name: str
    daily: list[Usage] = field(default_factory=list)
    monthly: list[Usage] = field(default_factory=list)

    def month(self, month: date) -> Usage | None:
        return next((u for u in self.monthly if u.period == month), None)

    def total(self, attr: str) -> Decimal:
        return sum((getattr(u, attr) for u in self.monthly), Decimal(0))

    @property
    def entries(self) -> int:
        return sum(u.entries for u in self.monthly)


@dataclass
class Dimension:
    """Every value of one dimension, plus the cross-dimension figures behind top movers.

    ``pairs[other][value]`` maps each value of ``other`` to its consumption together with
    ``value`` in (previous month, report month).
    """

    dimension: str
    values: list[DimensionValue]
    pairs: dict[str, dict[str | None, dict[str | None, tuple[Decimal, Decimal]]]]

    def monthly_total(self, month: date) -> Decimal:
        total = Decimal(0)
        for value in self.values:
            usage = value.month(month)
            if usage:
                total += usage.consumption
        return total


@dataclass(frozen=True)
class KeyAuditPlace:
    """Where a finding is: a file position (with the commit of a git-history hit) or a place
    the inventory lists."""

    path: str | None
    line: int | None
    column: int | None
    encoding: str | None
    commit: str | None
    place: str | None
    kind: str | None  # the column place_kind


@dataclass(frozen=True)
class KeyAuditFinding:
    """One finding of a key's latest audit, as key_audit_findings stores it."""

    finding_id: str
    key_name: str
    fingerprint: str | None
    last4: str
    key_status: str
    severity: str
    rule_id: str
    rule_name: str
    message: str
    remedy: str
    billing_readable: tuple[str, ...]
    baselined: bool
    counted: bool  # what the audit's exit code counted (not baselined)
    places: tuple[KeyAuditPlace, ...]


@dataclass(frozen=True)
class KeyAudit:
    key_name: str
    fingerprint: str | None
    last4: str
    status: str
    intended_scope: str
    severity: str
    billing_exposed: bool
    client_side_or_public: bool
    findings: int
    audited_at: datetime
    # The findings themselves; empty for runs from before they were stored (schema 5), see
    # ``findings_recorded``.
    finding_list: tuple[KeyAuditFinding, ...] = ()
    findings_recorded: bool = True


@dataclass
class Account:
    name: str
    as_of: date | None
    report_month: date | None
    report_month_full: bool
    daily: pl.DataFrame
    statements: list[Statement]
    breaks: list[Break]
    reconciliation: ReconciliationRun | None
    subscription: SubscriptionView | None
    consumption: ConsumptionSnapshot | None
    dimensions: dict[str, Dimension]
    ledger_entries: int
    reconciled_entries: int
    agents_in_period: int | None
    notices: list[str] = field(default_factory=list)

    def statement(self, month: date | None) -> Statement | None:
        return next((s for s in self.statements if s.month == month), None)


@dataclass
class ReportData:
    """Everything one build of the site shows, read once from the warehouse."""

    accounts: list[Account]
    key_audit: list[KeyAudit]
    notices: list[str] = field(default_factory=list)
