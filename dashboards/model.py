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

from pipelines.warehouse.outcomes import AccountStatus
from transforms.aggregate import STATEMENT_MONEY_COLUMNS, STATEMENT_MOVEMENTS
from transforms.breaks import KIND_OF_PLACEMENT

# How the site words each line; the lines and their order are defined once, with the rule that
# fills them (transforms/aggregate.py): a line without its words here fails at import.
_LINE_WORDS = {
    "opening": "Opening balance",
    "debits": "Debits (usage)",
    "credits": "Credits (grants, top-ups)",
    "refunds": "Refunds",
    "adjustments": "Adjustments",
    "other": "Other movements",
    "hidden_movements": "Hidden movements (not explained by any entry)",
    "closing": "Closing balance",
}
STATEMENT_LINES: tuple[tuple[str, str], ...] = tuple(
    (name, _LINE_WORDS[name]) for name in STATEMENT_MONEY_COLUMNS
)
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
        return sum((self.figure(m) for m in STATEMENT_MOVEMENTS), Decimal(0))

    @property
    def balances(self) -> bool:
        """opening + every movement = closing, exactly."""
        return self.opening + self.movements == self.closing


# Statement line -> the category of entry types it sums (transforms/entry_type.py).
LINE_CATEGORY = {
    "debits": "debit",
    "credits": "credit",
    "refunds": "refund",
    "adjustments": "adjustment",
    "other": "other",
}


@dataclass(frozen=True)
class StatementLine:
    """What one statement line of one month is made of, per entry type (the warehouse view
    ``statement_lines``): a Promotion (+) and an Expiry (-) are two lines, never one net."""

    month: date
    category: str
    entry_type: str
    amount: Decimal
    entries: int


@dataclass(frozen=True)
class MonthEntry:
    """One ledger entry of the report month, in chain order, with the balance around it.

    ``hidden_before`` is ``balance_before`` minus the previous entry's ``balance_after``: a
    hidden movement just before this entry (zero when the chain is continuous), so a spreadsheet
    can walk the balance entry by entry. A movement after the month's last entry (against
    /Consumption) is no entry's: the statement lists it.
    """

    entry_id: str
    created_at: datetime
    entry_type: str
    category: str
    signed_amount: Decimal  # its effect on the balance, whatever the sign convention
    hidden_before: Decimal | None  # None for the ledger's first entry: no entry before it
    balance_before: Decimal
    balance_after: Decimal
    agent_id: str | None
    campaign_id: str | None
    campaign_name: str | None
    channel: str | None
    description: str | None


@dataclass(frozen=True)
class Break:
    """One hidden movement: a balance change no ledger entry explains, whatever its placement.

    A row of the ``hidden_movements`` view. Breakdown differences are not movements and never
    come here (see ``Mismatch``). In a warehouse from before version 6 there is no id and no
    acknowledgement: ``break_id`` is None and the placement is told from the kind.
    """

    break_id: str | None
    placement: str  # before_first, between_entries, within_tie or after_last
    observed_on: date | None  # the day whose balance carries it
    break_start: datetime | None  # createdAt of the entry before; None before the first
    break_end: datetime | None  # createdAt of the entry after; None after the last
    expected: Decimal | None
    observed: Decimal | None
    gap: Decimal | None
    before_entry_id: str | None
    after_entry_id: str | None
    ambiguous: bool | None
    detail: str | None
    checked_at: datetime
    acknowledged: bool = False
    reason: str | None = None
    by: str | None = None
    at: datetime | None = None

    @property
    def kind(self) -> str:
        """What balance_breaks calls it: continuity, summary or opening."""
        return KIND_OF_PLACEMENT.get(self.placement, self.placement)


@dataclass(frozen=True)
class Mismatch:
    """One /Consumption/breakdown item that differs from the ledger's debits in its period.

    Credits of usage, not a balance movement: never added to ``Break`` gaps. A row of
    ``breakdown_mismatches`` with its acknowledgement; ``break_id`` is None in a warehouse from
    before version 6, where these were balance_breaks rows of kind 'breakdown'.
    """

    break_id: str | None
    period_start: datetime | None
    period_end: datetime | None
    agent_id: str | None
    campaign_id: str | None
    channel: str | None
    ledger_credits: Decimal | None
    breakdown_credits: Decimal | None
    difference: Decimal | None
    detail: str | None
    checked_at: datetime
    acknowledged: bool = False
    reason: str | None = None
    by: str | None = None
    at: datetime | None = None


@dataclass(frozen=True)
class LedgerHistory:
    """The latest ``ledger_history`` row: where discovery found the company's ledger begins."""

    discovered_at: datetime
    first_day: date | None
    first_entry_at: datetime | None
    opening_balance: Decimal | None
    decided_by: str
    searched_back_to: date | None
    history_limit: int | None
    requests: int | None
    detail: str | None


@dataclass(frozen=True)
class ReconciliationRun:
    """The latest ``reconciliation_runs`` row. The fields with defaults came with version 6:
    None in an older warehouse, whose page then says less rather than something wrong."""

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
    hidden_movements: int | None = None
    hidden_gross: Decimal | None = None
    hidden_net: Decimal | None = None
    unacknowledged: int | None = None
    opening_status: str | None = None
    opening_message: str | None = None


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
    breaks: list[Break]  # hidden movements of every placement, in the order they happened
    reconciliation: ReconciliationRun | None
    subscription: SubscriptionView | None
    consumption: ConsumptionSnapshot | None
    dimensions: dict[str, Dimension]
    ledger_entries: int
    reconciled_entries: int
    agents_in_period: int | None
    notices: list[str] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)  # never summed with breaks
    history: LedgerHistory | None = None
    # Per month, the lines by entry type; None for a warehouse without statement_lines.
    lines: dict[date, list[StatementLine]] | None = None
    # The report month's entries, one by one (only that month's: the site stays sized by days).
    month_entries: list[MonthEntry] | None = None
    # Days a spend_anomaly alert fired for, by (dimension column, value): marked on its chart.
    anomalies: dict[tuple[str, str], list[date]] = field(default_factory=dict)
    # Per closed month, when it was closed; per restated month, each changed line's sentence
    # ("closing: restated on 2026-11-05 (was X, now Y): late entries ...").
    closes: dict[date, str] = field(default_factory=dict)
    restated: dict[date, list[str]] = field(default_factory=dict)

    def statement(self, month: date | None) -> Statement | None:
        return next((s for s in self.statements if s.month == month), None)


@dataclass
class ReportData:
    """Everything one build of the site shows, read once from the warehouse."""

    accounts: list[Account]
    key_audit: list[KeyAudit]
    notices: list[str] = field(default_factory=list)
    # Every account of the accounts file (and any other a sync recorded), with or without data.
    statuses: list[AccountStatus] = field(default_factory=list)
    # The alerts view's rows (dashboards/read_alerts.py), seen-only ones left out.
    alerts: list[dict[str, Any]] = field(default_factory=list)
