"""Reconciling one account: read the landed tables, apply the transforms, stage the results.

The rules are in transforms/ (pure polars); this module only moves data between them and the
warehouse, so the same rules can be tested on frames and run on the real file. The ledger is
read one slice of whole days at a time (`slices`), with what the rules need carried from slice
to slice (`chain_carry`), so memory is bounded by the slice and the results are those of one run
over the whole ledger. A pass starts from the first day a sync touched when the rows before it
can be kept (`incremental`), else from the first entry.

Reading and staging (`stage_account`) happen under the shared lock, outside any transaction;
the staged rows of every account are then written in one transaction (`commit_staged`), from
which an account that failed is simply absent.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.reconciliation.chain_carry import ChainCarry, reconcile_slice
from pipelines.reconciliation.context import Context, ContextReads
from pipelines.reconciliation.convention import infer_convention
from pipelines.reconciliation.findings import (
    after_last_day,
    mismatch_rows,
    move_opening_into_day,
    with_movement_after_last,
)
from pipelines.reconciliation.incremental import (
    PassPlan,
    PlanFacts,
    fingerprint,
    plan_facts,
    plan_pass,
    with_kept_debits,
)
from pipelines.reconciliation.outputs import slice_rows, stamped
from pipelines.reconciliation.result import (
    DUCKDB_MEMORY_LIMIT,
    ReconcileOptions,
    ReconciliationResult,
)
from pipelines.reconciliation.slices import (
    LedgerDay,
    LedgerSlice,
    ledger_days,
    plan_slices,
    read_slice,
)
from pipelines.reconciliation.staging import AccountStage
from pipelines.reconciliation.tails import (
    ReconciledTail,
    RulesKey,
    read_tails,
    reconcile_tails,
)
from pipelines.warehouse.derived import validate_staged
from pipelines.warehouse.writer import AccountReplacement, StagedDerived, Warehouse
from transforms.breaks import empty_breaks, placed
from transforms.cross_checks import (
    CheckOutcome,
    ItemKey,
    LedgerDebits,
    ReportedBreakdown,
    compare_breakdown,
    compare_summary,
    ledger_end,
    no_ledger_entries,
)
from transforms.entry_type import EntryTypeRules
from transforms.micros import decimal_to_micros
from transforms.normalize import SIGN_CONVENTIONS, SignConvention, SignInference
from transforms.opening import compare_opening, ledger_start

__all__ = [
    "DUCKDB_MEMORY_LIMIT",
    "ReconcileOptions",
    "ReconciliationResult",
    "SharedReads",
    "commit_staged",
    "reconcile_account",
    "reconcile_accounts",
    "stage_account",
]


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
    ambiguous_days: dict[date, int] = field(default_factory=dict)
    debits: dict[ItemKey, int] = field(default_factory=dict)
    opening: CheckOutcome | None = None
    daily: list[pl.DataFrame] = field(default_factory=list)
    breaks: list[pl.DataFrame] = field(default_factory=list)  # stamped with the run at the end


def reconcile_account(
    warehouse: Warehouse,
    account: str,
    options: ReconcileOptions,
    run_id: str,
    *,
    full: bool = False,
) -> ReconciliationResult:
    """Reconciles `account` and replaces its derived rows in one transaction; `full` re-derives
    its whole history even when the rows before the sync's first day could be kept."""
    return reconcile_accounts(warehouse, {account: options}, run_id, full=full)[account]


def reconcile_accounts(
    warehouse: Warehouse,
    options: Mapping[str, ReconcileOptions],
    run_id: str,
    *,
    full: bool = False,
) -> dict[str, ReconciliationResult]:
    """Reconciles every account of `options` (each with its own) as the asset does: the small
    tables read once for all through one read connection, each account staged, all committed
    in one transaction. A failure fails them all here (the asset isolates each account)."""
    accounts = list(options)
    limit = next(iter(options.values())).duckdb_memory_limit if options else None
    results: dict[str, ReconciliationResult] = {}
    with tempfile.TemporaryDirectory(prefix="creditlens-reconcile-") as root:
        try:
            with warehouse.reading(limit) as source:
                shared = SharedReads.read(source, accounts, options)
                staged = []
                for account in accounts:
                    result, one = stage_account(
                        source, shared, account, options[account], run_id, Path(root), full=full
                    )
                    results[account] = result
                    staged.append(one)
        except Exception:
            commit_staged(warehouse, [], limit, failed=accounts)
            raise
        commit_staged(warehouse, staged, limit)
    return results


@dataclass(frozen=True)
class SharedReads:
    """What every account's pass reads of the small tables and of its past, read for all the
    run's accounts at once: a few queries whatever their number. ``checked_at`` is taken before
    them: a landing that commits after this instant is seen by the next run."""

    checked_at: datetime
    contexts: ContextReads
    facts: dict[str, PlanFacts]
    # The entries from each incremental candidate's boundary on, read in a few queries of at
    # most TAIL_ENTRIES each (``read_tails``); an account left out reads each slice on its own.
    tails: dict[str, pl.DataFrame] = field(default_factory=dict)
    # Those tails, reconciled in one pass per set of rules (``reconcile_tails``).
    reconciled: dict[str, ReconciledTail] = field(default_factory=dict)

    @classmethod
    def read(
        cls,
        source: AccountReplacement,
        accounts: Sequence[str],
        options: Mapping[str, ReconcileOptions] | None = None,
    ) -> SharedReads:
        """``options``: each account's, to reconcile every tail in one pass; without them each
        account's pass reconciles its own."""
        checked_at = datetime.now(UTC)
        contexts = ContextReads.read(source, accounts)
        facts = with_kept_debits(
            source, plan_facts(source, accounts), _periods(contexts, accounts), _rules(options)
        )
        tails = read_tails(source, facts)
        return cls(
            checked_at, contexts, facts, tails, reconcile_tails(facts, tails, contexts, options)
        )

    def days(
        self, source: AccountReplacement, account: str, since: datetime | None
    ) -> list[LedgerDay]:
        """The account's days from `since` (``ledger_days``), from the read-ahead when it holds
        them: the days from the boundary it was read for."""
        facts = self.facts.get(account)
        if since is not None and facts and facts.kept and facts.kept.since == since:
            return [d for d in facts.recent_days if d.day >= since.date()]
        return ledger_days(source, account, since)

    def slice_of(
        self, source: AccountReplacement, account: str, piece: LedgerSlice
    ) -> pl.DataFrame:
        """The slice's entries (``read_slice``), from the account's tail when it was read."""
        tail = self.tails.get(account)
        if tail is None or piece.start < self._since(account):
            return read_slice(source, account, piece)
        at = pl.col("created_at")
        return tail.filter((at >= piece.start) & (at < piece.end))

    def _since(self, account: str) -> datetime:
        kept = self.facts[account].kept
        assert kept is not None  # a tail is read only at a boundary
        return kept.since

    def reconciled_slice(
        self, account: str, piece: LedgerSlice, carry: ChainCarry, rules: RulesKey
    ) -> ReconciledTail | None:
        """The slice's continuity from the one pass over every tail, when the slice is the
        account's whole tail, resumed from the same carry under the same rules; else None (the
        account's pass reconciles it itself)."""
        done = self.reconciled.get(account)
        if done is None or done.rules != rules or piece.start != self._since(account):
            return None
        if done.last_entry is not None and piece.end <= done.last_entry:
            return None  # the tail is sliced: each slice is reconciled on its own
        last, mine = carry.last, done.carry.last
        if last is None or mine is None or carry.entries != done.carry.entries:
            return None
        if last["entry_id"][0] != mine["entry_id"][0] or not carry.closes_alone:
            return None
        return done


def _rules(options: Mapping[str, ReconcileOptions] | None) -> dict[str, EntryTypeRules]:
    """Each account's entry-type rules."""
    return {account: chosen.rules() for account, chosen in (options or {}).items()}


def _periods(
    contexts: ContextReads, accounts: Sequence[str]
) -> dict[str, tuple[datetime, datetime]]:
    """Each account's breakdown period, where its snapshot reads as one; an account whose does
    not is left to its own pass, which says why in its own line."""
    periods = {}
    for account in accounts:
        try:
            reported = contexts.context(account).breakdown
        except Exception:  # its own pass raises it again, as that account's failure alone
            continue
        if isinstance(reported, ReportedBreakdown):
            periods[account] = (reported.start, reported.end)
    return periods


def commit_staged(
    warehouse: Warehouse,
    staged: Sequence[StagedDerived],
    memory_limit: str | None,
    failed: Sequence[str] = (),
) -> None:
    """Every account's staged rows in one transaction (each was validated when staged); the
    `failed` accounts keep their rows and reconcile fully next time."""
    warehouse.commit_derived(staged, memory_limit, failed)


def stage_account(
    source: AccountReplacement,
    shared: SharedReads,
    account: str,
    options: ReconcileOptions,
    run_id: str,
    root: Path,
    *,
    full: bool = False,
) -> tuple[ReconciliationResult, StagedDerived]:
    """Reconciles and stages `account` (files under a new directory in `root`) through the
    run's read connection, then validates what it staged: a failure here is the account's
    alone, before any transaction."""
    _check_options(options)
    rules = options.rules()
    tolerance = Decimal(options.tolerance)
    context = shared.contexts.context(account)
    facts = shared.facts[account]
    stamp = fingerprint(
        facts.schema_version, context, options.sign_convention, str(tolerance), rules
    )
    plan = plan_pass(
        source,
        account,
        context,
        facts,
        stamp=stamp,
        full=full,
        infer=options.sign_convention == "infer",
        rules=rules,
        tolerance=tolerance,
    )
    slices = plan_slices(shared.days(source, account, plan.since), options.slice_entries)
    inference: SignInference | None = None
    if options.sign_convention == "infer":
        inference = infer_convention(source, account, slices, rules)
    convention = inference.convention if inference else options.sign_convention
    pass_ = _Pass(
        account=account,
        run_id=run_id,
        checked_at=shared.checked_at,
        convention=convention,  # type: ignore[arg-type]
        tolerance=tolerance,
        rules=rules,
        context=context,
    )
    stage = AccountStage(Path(tempfile.mkdtemp(dir=root)), account, plan.since)
    totals = _carried_totals(plan)
    for piece in slices:
        _reconcile_slice(source, shared, stage, piece, pass_, totals)
    result = _finish(stage, pass_, totals, plan, inference)
    staged = stage.staged()
    validate_staged(staged)
    return result, staged


def _carried_totals(plan: PassPlan) -> _Totals:
    """What the kept days add up to (nothing for a full pass)."""
    carried = plan.carried
    if carried is None:
        return _Totals()
    return _Totals(
        carry=carried.carry,
        continuity=[carried.continuity],
        ambiguous=carried.ambiguous,
        debits=dict(carried.debits),
        opening=carried.opening,
    )


def _finish(
    stage: AccountStage,
    shared: _Pass,
    totals: _Totals,
    plan: PassPlan,
    inference: SignInference | None,
) -> ReconciliationResult:
    """The checks that need the whole ledger's end, the small tables and the run's records."""
    account, run_id, context, tolerance = (
        shared.account, shared.run_id, shared.context, shared.tolerance)  # fmt: skip
    continuity = pl.concat(totals.continuity, how="vertical_relaxed")
    entries, last = totals.carry.entries, totals.carry.last
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
    daily = pl.concat(totals.daily, how="vertical_relaxed") if totals.daily else None
    if daily is not None:
        if after_last.height:
            daily = with_movement_after_last(daily, after_last.row(0, named=True), run_id)
        stage.write("daily_balance", daily)
    stage.write("balance_breaks", stamped(
        pl.concat([*totals.breaks, after_last], how="vertical_relaxed"), run_id, shared.checked_at
    ))  # fmt: skip
    breakdown = compare_breakdown(
        context.breakdown,
        LedgerDebits(account, totals.debits) if entries else no_ledger_entries(account),
        tolerance=tolerance,
    )
    mismatches = placed(breakdown.breaks)
    stage.write("breakdown_mismatches", mismatch_rows(mismatches, run_id, shared.checked_at))
    stage.write("ambiguous_tie_days", pl.DataFrame(
        {"account": [account] * len(totals.ambiguous_days),
         "day": list(totals.ambiguous_days), "groups": list(totals.ambiguous_days.values())},
        schema={"account": pl.Utf8, "day": pl.Date, "groups": pl.Int32},
    ))  # fmt: skip
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
        convention=shared.convention,
        inferred=inference is not None,
        tolerance=tolerance,
        breaks=found,
        summary=summary,
        breakdown=breakdown,
        ambiguous_ties=totals.ambiguous,
        opening=opening,
        acknowledged=held,
        pass_kind=plan.describe(),
    )
    row = _run_row(result, shared, inference, continuity.height)
    stage.record(
        "reconciliation_runs", {**row, "reconciled_from": plan.since.date() if plan.since else None}
    )
    stage.record("reconciliation_carry", {
        "account": account, "run_id": run_id, "checked_at": shared.checked_at,
        "fingerprint": plan.fingerprint,
        "mode": "full" if plan.carried is None else "incremental",
        "reconciled_from": plan.since.date() if plan.since else None,
        "reason": plan.describe(),
        "last_day": last["created_at"][0].astimezone(UTC).date() if last is not None else None,
    })  # fmt: skip
    return result


def _run_row(
    result: ReconciliationResult, shared: _Pass, inference: SignInference | None, breaks: int
) -> dict[str, Any]:
    """The run's row of reconciliation_runs."""
    gross, net = result.gross_and_net
    pairs = inference.pairs_explained if inference else {}
    return {
        "account": result.account,
        "run_id": shared.run_id,
        "checked_at": shared.checked_at,
        "sign_convention": result.convention,
        "sign_inferred": inference is not None,
        "pairs_explained_signed": pairs.get("signed"),
        "pairs_explained_unsigned": pairs.get("unsigned"),
        "tolerance": result.tolerance,
        "entries": result.entries,
        "continuity_breaks": breaks,
        "ambiguous_ties": result.ambiguous_ties,
        "summary_status": result.summary.status,
        "summary_message": result.summary.message,
        "breakdown_status": result.breakdown.status,
        "breakdown_message": result.breakdown.message,
        "hidden_movements": result.movements.height,
        "hidden_gross": gross,
        "hidden_net": net,
        "unacknowledged": result.open_findings,
        "opening_status": result.opening.status,
        "opening_message": result.opening.message,
    }


def _reconcile_slice(
    source: AccountReplacement,
    reads: SharedReads,
    stage: AccountStage,
    piece: LedgerSlice,
    shared: _Pass,
    totals: _Totals,
) -> None:
    """One slice: reconciled, its rows staged, its share added to `totals`.

    A function of its own so the slice's frames are freed when it returns, before the next
    slice is read.
    """
    rules = shared.rules
    previous = totals.carry.last
    done = reads.reconciled_slice(
        shared.account, piece, totals.carry, (shared.convention, shared.tolerance, rules)
    )
    if done is not None:
        part, rows = done.result, done.rows
    else:
        ledger = reads.slice_of(source, shared.account, piece)
        part = reconcile_slice(
            ledger,
            totals.carry,
            convention=shared.convention,
            tolerance=shared.tolerance,
            rules=rules,
        )
        del ledger
        rows = slice_rows(part.ordered, previous, {shared.account: shared.context}, rules)[
            shared.account
        ]
    ordered = part.ordered
    daily = rows.daily.with_columns(run_id=pl.lit(shared.run_id))
    breaks = placed(part.breaks)
    if previous is None and ordered.height:
        outcome = compare_opening(
            ledger_start(ordered.row(0, named=True)),
            shared.context.history_first_day,
            tolerance=shared.tolerance,
        )
        opening = placed(outcome.breaks)
        totals.opening = replace(outcome, breaks=opening)
        daily = move_opening_into_day(daily, opening)
        totals.breaks.append(opening)
    totals.breaks.append(breaks)
    totals.daily.append(daily)
    stage.write("ledger_chain", rows.chain)
    for key, micros in (rows.debits or {}).items():
        totals.debits[key] = totals.debits.get(key, 0) + micros
    totals.continuity.append(breaks)
    totals.ambiguous += part.ambiguous_groups
    for day, groups in part.ambiguous_days.items():
        totals.ambiguous_days[day] = totals.ambiguous_days.get(day, 0) + groups
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
