"""Reconciling one account: read the landed tables, apply the transforms, write the results.

The rules are in transforms/ (pure polars); this module only moves data between them and the
warehouse, so the same rules can be tested on frames and run on the real file. The ledger is
read and written one slice of whole days at a time (`slices`), with what the rules need carried
from slice to slice (`chain_carry`), so memory is bounded by the slice and the results are those
of one run over the whole ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import polars as pl

from pipelines.reconciliation.chain_carry import ChainCarry, reconcile_slice
from pipelines.reconciliation.convention import infer_convention
from pipelines.reconciliation.findings import (
    Acknowledgements,
    add_to_day,
    after_last_day,
    mismatch_rows,
    move_opening_into_day,
    read_acknowledgements,
)
from pipelines.reconciliation.outputs import daily_rows, enriched_rows, stamped
from pipelines.reconciliation.slices import (
    SLICE_ENTRIES,
    LedgerSlice,
    Reader,
    ledger_days,
    plan_slices,
    read_slice,
)
from pipelines.warehouse.writer import AccountReplacement, Warehouse
from transforms.breaks import BREAK_KINDS, empty_breaks, placed
from transforms.cross_checks import (
    CheckOutcome,
    ItemKey,
    LedgerDebits,
    ReportedBreakdown,
    compare_breakdown,
    compare_summary,
    ledger_debits,
    ledger_end,
    no_ledger_entries,
    read_breakdown,
    read_summary,
)
from transforms.entry_type import EntryTypeRules
from transforms.micros import decimal_to_micros
from transforms.normalize import SIGN_CONVENTIONS, SignConvention, SignInference
from transforms.opening import compare_opening, ledger_start

DERIVED_TABLES = ("balance_breaks", "breakdown_mismatches", "daily_balance", "ledger_chain")
# DuckDB's buffers while reconciling: blocks read and rows written in the open transaction are
# kept up to this, then spill to the file. At 1M entries 64MB peaks ~60 MB below 128MB.
DUCKDB_MEMORY_LIMIT = "64MB"


@dataclass(frozen=True)
class ReconcileOptions:
    sign_convention: str = "signed"
    tolerance: Decimal = Decimal(0)
    debit_type_pattern: str | None = None
    slice_entries: int | None = SLICE_ENTRIES  # None: the whole ledger at once
    duckdb_memory_limit: str | None = DUCKDB_MEMORY_LIMIT  # None: the connection's default

    def rules(self) -> EntryTypeRules:
        if self.debit_type_pattern:
            return EntryTypeRules(debit_pattern=self.debit_type_pattern)
        return EntryTypeRules()


@dataclass(frozen=True)
class ReconciliationResult:
    account: str
    entries: int
    convention: str
    inferred: bool
    tolerance: Decimal
    breaks: pl.DataFrame  # hidden movements of every placement, then breakdown mismatches
    summary: CheckOutcome
    breakdown: CheckOutcome
    ambiguous_ties: int
    opening: CheckOutcome = field(
        default_factory=lambda: CheckOutcome("unavailable", "", empty_breaks(), Decimal(0))
    )
    acknowledged: frozenset[str] = frozenset()  # break ids acknowledged with their current gap

    @property
    def continuity_breaks(self) -> pl.DataFrame:
        return self.breaks.filter(pl.col("kind") == "continuity")

    @property
    def movements(self) -> pl.DataFrame:
        """Every hidden movement, whatever its placement (the hidden_movements view's rows)."""
        return self.breaks.filter(pl.col("kind") != "breakdown")

    @property
    def mismatches(self) -> pl.DataFrame:
        return self.breaks.filter(pl.col("kind") == "breakdown")

    def unacknowledged(self, frame: pl.DataFrame) -> pl.DataFrame:
        return frame.filter(~pl.col("break_id").is_in(list(self.acknowledged)))

    @property
    def open_findings(self) -> int:
        """Movements and mismatches nobody acknowledged: what --fail-on-breaks counts."""
        return self.breaks.height - len(self.acknowledged)

    @property
    def gross_and_net(self) -> tuple[Decimal, Decimal]:
        """The movements' sum of |gap| and sum of gap: a net figure alone would let two
        movements of opposite sign hide each other."""
        gaps = self.movements["gap"].to_list()
        return sum((abs(g) for g in gaps), Decimal(0)), sum(gaps, Decimal(0))

    def counts(self) -> dict[str, int]:
        kinds = self.breaks["kind"].to_list()
        return {k: kinds.count(k) for k in BREAK_KINDS}


@dataclass(frozen=True)
class Context:
    """What every slice needs besides its entries: read once per reconciliation."""

    subscriptions: pl.DataFrame
    campaigns: pl.DataFrame
    summary: Decimal | str  # the stored balance, or why the summary cannot be checked
    breakdown: ReportedBreakdown | str
    summary_day: date | None = None  # the UTC day the summary was fetched: it observes then
    history_first_day: date | None = None  # where discovery found the ledger begins
    acknowledgements: Acknowledgements = field(default_factory=dict)


def load_context(source: Reader, account: str) -> Context:
    """Everything but the ledger: small tables and the latest snapshots, read once.

    The snapshots are handed to the checks as stored: their payloads were parsed when they
    landed, and are not parsed again here.
    """
    subscriptions = source.read(
        "SELECT account, fetched_at, plan, status FROM subscription_snapshots "
        "WHERE account = ? AND shape_ok",
        [account],
    )
    campaigns = source.read(
        "SELECT account, campaign_id, name FROM campaigns_current WHERE account = ?", [account]
    )
    summary = source.read(
        "SELECT balance, shape_ok, fetched_at FROM consumption_snapshots WHERE account = ? "
        "ORDER BY fetched_at DESC LIMIT 1",
        [account],
    )
    history = source.read(
        "SELECT first_day FROM ledger_history WHERE account = ? "
        "ORDER BY discovered_at DESC LIMIT 1",
        [account],
    )
    breakdown = source.read(
        "SELECT period_start, period_end, item_index, agent_id, campaign_id, channel, credits, "
        "shape_ok FROM breakdown_snapshots WHERE account = ? AND fetched_at = "
        "(SELECT max(fetched_at) FROM breakdown_snapshots WHERE account = ?) "
        "ORDER BY item_index",
        [account, account],
    )
    return Context(
        subscriptions=subscriptions,
        campaigns=campaigns,
        summary=read_summary(summary.to_dicts()),
        breakdown=read_breakdown(breakdown.to_dicts()),
        summary_day=summary["fetched_at"][0].astimezone(UTC).date() if summary.height else None,
        history_first_day=history["first_day"][0] if history.height else None,
        acknowledgements=read_acknowledgements(source, account),
    )


@dataclass(frozen=True)
class _Pass:
    """What every slice of one reconciliation shares."""

    account: str
    run_id: str
    checked_at: datetime
    convention: SignConvention
    tolerance: Decimal
    rules: EntryTypeRules
    context: Context


@dataclass
class _Totals:
    """What the slices add up to, and the carry from the last one."""

    carry: ChainCarry = field(default_factory=ChainCarry)
    continuity: list[pl.DataFrame] = field(default_factory=lambda: [empty_breaks()])
    ambiguous: int = 0
    debits: dict[ItemKey, int] = field(default_factory=dict)
    opening: CheckOutcome | None = None


def reconcile_account(
    warehouse: Warehouse, account: str, options: ReconcileOptions, run_id: str
) -> ReconciliationResult:
    """Reconciles `account` slice by slice and replaces its derived rows in one transaction."""
    _check_options(options)
    rules = options.rules()
    tolerance = Decimal(options.tolerance)
    with warehouse.replacing_for_account(
        account, DERIVED_TABLES, memory_limit=options.duckdb_memory_limit
    ) as out:
        context = load_context(out, account)
        slices = plan_slices(ledger_days(out, account), options.slice_entries)
        inference: SignInference | None = None
        if options.sign_convention == "infer":
            inference = infer_convention(out, account, slices, rules)
        convention = inference.convention if inference else options.sign_convention
        shared = _Pass(
            account=account,
            run_id=run_id,
            checked_at=datetime.now(UTC),
            convention=convention,  # type: ignore[arg-type]
            tolerance=tolerance,
            rules=rules,
            context=context,
        )
        totals = _Totals()
        for piece in slices:
            _reconcile_slice(out, piece, shared, totals)
        continuity = pl.concat(totals.continuity, how="vertical_relaxed")
        entries = totals.carry.entries
        last = totals.carry.last
        opening = totals.opening or compare_opening(no_ledger_entries(account), None)
        summary = compare_summary(
            ledger_end(last, account) if last is not None else no_ledger_entries(account),
            context.summary,
            tolerance=tolerance,
        )
        after_last = placed(
            summary.breaks.with_columns(
                observed_on=pl.lit(after_last_day(last, context.summary_day), dtype=pl.Date)
            )
        )
        if after_last.height:
            add_to_day(out, after_last.row(0, named=True), run_id)
        breakdown = compare_breakdown(
            context.breakdown,
            LedgerDebits(account, totals.debits) if entries else no_ledger_entries(account),
            tolerance=tolerance,
        )
        mismatches = placed(breakdown.breaks)
        out.insert("balance_breaks", stamped(after_last, run_id, shared.checked_at))
        out.insert("breakdown_mismatches", mismatch_rows(mismatches, run_id, shared.checked_at))
        movements = pl.concat([opening.breaks, continuity, after_last], how="vertical_relaxed")
        found = pl.concat([movements, mismatches], how="vertical_relaxed")
        acknowledged = context.acknowledgements
        held = frozenset(
            row["break_id"]
            for row in found.select("break_id", "gap").iter_rows(named=True)
            if row["break_id"] in acknowledged and acknowledged[row["break_id"]] == row["gap"]
        )
        result = ReconciliationResult(
            account=account,
            entries=entries,
            convention=convention,
            inferred=inference is not None,
            tolerance=tolerance,
            breaks=found,
            summary=summary,
            breakdown=breakdown,
            ambiguous_ties=totals.ambiguous,
            opening=opening,
            acknowledged=held,
        )
        gross, net = result.gross_and_net
        pairs = inference.pairs_explained if inference else {}
        run_row = {
            "account": account,
            "run_id": run_id,
            "checked_at": shared.checked_at,
            "sign_convention": convention,
            "sign_inferred": inference is not None,
            "pairs_explained_signed": pairs.get("signed"),
            "pairs_explained_unsigned": pairs.get("unsigned"),
            "tolerance": tolerance,
            "entries": entries,
            "continuity_breaks": continuity.height,
            "ambiguous_ties": totals.ambiguous,
            "summary_status": summary.status,
            "summary_message": summary.message,
            "breakdown_status": breakdown.status,
            "breakdown_message": breakdown.message,
            "hidden_movements": movements.height,
            "hidden_gross": gross,
            "hidden_net": net,
            "unacknowledged": result.open_findings,
            "opening_status": opening.status,
            "opening_message": opening.message,
        }
        out.append("reconciliation_runs", [run_row])
    return result


def _reconcile_slice(
    out: AccountReplacement, piece: LedgerSlice, shared: _Pass, totals: _Totals
) -> None:
    """One slice: reconciled, its rows written, its share added to `totals`.

    A function of its own so the slice's frames are freed when it returns, before the next
    slice is read.
    """
    rules = shared.rules
    ledger = read_slice(out, shared.account, piece)
    part = reconcile_slice(
        ledger,
        totals.carry,
        convention=shared.convention,
        tolerance=shared.tolerance,
        rules=rules,
    )
    del ledger
    ordered = part.ordered
    daily = daily_rows(ordered, totals.carry.last, rules, shared.run_id)
    breaks = placed(part.breaks)
    if totals.carry.last is None and ordered.height:
        outcome = compare_opening(
            ledger_start(ordered.row(0, named=True)),
            shared.context.history_first_day,
            tolerance=shared.tolerance,
        )
        opening = placed(outcome.breaks)
        totals.opening = replace(outcome, breaks=opening)
        daily = move_opening_into_day(daily, opening)
        out.insert("balance_breaks", stamped(opening, shared.run_id, shared.checked_at))
    out.insert("balance_breaks", stamped(breaks, shared.run_id, shared.checked_at))
    out.insert("daily_balance", daily)
    context = shared.context
    out.insert(
        "ledger_chain",
        enriched_rows(ordered, context.subscriptions, context.campaigns, rules),
    )
    reported = shared.context.breakdown
    if isinstance(reported, ReportedBreakdown):
        period = reported.start, reported.end
        for key, micros in ledger_debits(ordered, *period, rules).items():
            totals.debits[key] = totals.debits.get(key, 0) + micros
    totals.continuity.append(breaks)
    totals.ambiguous += part.ambiguous_groups
    totals.carry = part.carry


def _check_options(options: ReconcileOptions) -> None:
    """What the rules would refuse, refused before the transaction opens, even with no entries."""
    if options.sign_convention not in (*SIGN_CONVENTIONS, "infer"):
        raise ValueError(
            f"unknown sign convention {options.sign_convention!r}; "
            "expected signed, unsigned or infer"
        )
    if decimal_to_micros(Decimal(options.tolerance)) < 0:
        raise ValueError("tolerance must not be negative")


def breaks_records(breaks: pl.DataFrame, limit: int = 50) -> list[dict[str, Any]]:
    """The breaks as JSON-ready records for Dagster metadata (capped; the table holds them all).

    Money and timestamps become their text, so nothing passes through float.
    """
    plain = (str, int, bool, type(None))
    return [
        {k: v if isinstance(v, plain) else str(v) for k, v in row.items()}
        for row in breaks.head(limit).iter_rows(named=True)
    ]
