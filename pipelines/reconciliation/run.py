"""Reconciling one account: read the landed tables, apply the transforms, write the results.

The rules are in transforms/ (pure polars); this module only moves data between them and the
warehouse, so the same rules can be tested on frames and run on the real file. The ledger is
read and written one slice of whole days at a time (`slices`), with what the rules need carried
from slice to slice (`chain_carry`), so memory is bounded by the slice and the results are those
of one run over the whole ledger.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import polars as pl

from pipelines.reconciliation.chain_carry import ChainCarry, reconcile_slice
from pipelines.reconciliation.convention import infer_convention
from pipelines.reconciliation.outputs import daily_rows, enriched_rows, stamped
from pipelines.reconciliation.slices import (
    SLICE_ENTRIES,
    Reader,
    ledger_days,
    plan_slices,
    read_slice,
)
from pipelines.warehouse.writer import Warehouse
from transforms.breaks import empty_breaks
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
)
from transforms.entry_type import EntryTypeRules
from transforms.micros import decimal_to_micros
from transforms.normalize import SIGN_CONVENTIONS, SignConvention, SignInference

DERIVED_TABLES = ("balance_breaks", "daily_balance", "ledger_enriched")
# What DuckDB may keep of the rows written so far (they spill to the file beyond it).
DUCKDB_MEMORY_LIMIT = "128MB"


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
    breaks: pl.DataFrame
    summary: CheckOutcome
    breakdown: CheckOutcome
    ambiguous_ties: int

    @property
    def continuity_breaks(self) -> pl.DataFrame:
        return self.breaks.filter(pl.col("kind") == "continuity")

    def counts(self) -> dict[str, int]:
        kinds = self.breaks["kind"].to_list()
        return {k: kinds.count(k) for k in ("continuity", "summary", "breakdown")}


def _summary_doc(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not rows:
        return None
    row = rows[0]
    if row["balance"] is None:
        return {}  # the configured field was absent: the check says so instead of failing
    return {"balance": row["balance"]}


def _breakdown_doc(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not rows or not rows[0]["shape_ok"]:
        return None
    first = rows[0]
    items = [
        {
            "agentId": r["agent_id"],
            "campaignId": r["campaign_id"],
            "channel": r["channel"],
            "credits": r["credits"],
        }
        for r in rows
        if r["item_index"] is not None
    ]
    return {"periodStart": first["period_start"], "periodEnd": first["period_end"], "items": items}


def load_context(source: Reader, account: str) -> dict[str, Any]:
    """Everything but the ledger: small tables and the latest snapshots, read once."""
    subscriptions = source.read(
        "SELECT account, fetched_at, plan, status FROM subscription_snapshots "
        "WHERE account = ? AND shape_ok",
        [account],
    )
    campaigns = source.read(
        "SELECT account, campaign_id, name FROM campaigns_current WHERE account = ?", [account]
    )
    summary = source.read(
        "SELECT balance FROM consumption_snapshots WHERE account = ? "
        "ORDER BY fetched_at DESC LIMIT 1",
        [account],
    )
    breakdown = source.read(
        "SELECT * FROM breakdown_snapshots WHERE account = ? AND fetched_at = "
        "(SELECT max(fetched_at) FROM breakdown_snapshots WHERE account = ?) "
        "ORDER BY item_index",
        [account, account],
    )
    return {
        "subscriptions": subscriptions,
        "campaigns": campaigns,
        "summary": _summary_doc(summary.to_dicts()),
        "breakdown": _breakdown_doc(breakdown.to_dicts()),
    }


def reconcile_account(
    warehouse: Warehouse, account: str, options: ReconcileOptions, run_id: str
) -> ReconciliationResult:
    """Reconciles `account` slice by slice and replaces its derived rows in one transaction."""
    rules = options.rules()
    tolerance = Decimal(options.tolerance)
    _check_options(options)
    checked_at = datetime.now(UTC)
    with warehouse.replacing_for_account(
        account, DERIVED_TABLES, memory_limit=options.duckdb_memory_limit
    ) as out:
        context = load_context(out, account)
        slices = plan_slices(ledger_days(out, account), options.slice_entries)
        inference: SignInference | None = None
        convention: SignConvention
        if options.sign_convention == "infer":
            inference = infer_convention(out, account, slices, rules)
            convention = inference.convention
        else:
            convention = options.sign_convention  # type: ignore[assignment]
        reported = read_breakdown(context["breakdown"])
        debits: dict[ItemKey, int] = {}
        carry = ChainCarry()
        continuity = [empty_breaks()]
        ambiguous = 0
        for piece in slices:
            ledger = read_slice(out, account, piece)
            part = reconcile_slice(
                ledger, carry, convention=convention, tolerance=tolerance, rules=rules
            )
            del ledger
            ordered = part.ordered
            out.insert("balance_breaks", stamped(part.breaks, run_id, checked_at))
            out.insert("daily_balance", daily_rows(ordered, carry.last, rules, run_id))
            out.insert(
                "ledger_enriched",
                enriched_rows(ordered, context["subscriptions"], context["campaigns"], rules),
            )
            if isinstance(reported, ReportedBreakdown):
                for key, micros in ledger_debits(
                    ordered, reported.start, reported.end, rules
                ).items():
                    debits[key] = debits.get(key, 0) + micros
            continuity.append(part.breaks)
            ambiguous += part.ambiguous_groups
            carry = part.carry
        continuity_breaks = pl.concat(continuity, how="vertical_relaxed")
        entries = carry.entries
        end = ledger_end(carry.last, account) if carry.last is not None else None
        summary = compare_summary(
            end or no_ledger_entries(account), context["summary"], tolerance=tolerance
        )
        breakdown = compare_breakdown(
            reported,
            LedgerDebits(account, debits) if entries else no_ledger_entries(account),
            tolerance=tolerance,
        )
        checks = pl.concat([summary.breaks, breakdown.breaks], how="vertical_relaxed")
        out.insert("balance_breaks", stamped(checks, run_id, checked_at))
        run_row = {
            "account": account,
            "run_id": run_id,
            "checked_at": checked_at,
            "sign_convention": convention,
            "sign_inferred": inference is not None,
            "pairs_explained_signed": inference.pairs_explained.get("signed")
            if inference
            else None,
            "pairs_explained_unsigned": inference.pairs_explained.get("unsigned")
            if inference
            else None,
            "tolerance": tolerance,
            "entries": entries,
            "continuity_breaks": continuity_breaks.height,
            "ambiguous_ties": ambiguous,
            "summary_status": summary.status,
            "summary_message": summary.message,
            "breakdown_status": breakdown.status,
            "breakdown_message": breakdown.message,
        }
        out.append("reconciliation_runs", [run_row])
    return ReconciliationResult(
        account=account,
        entries=entries,
        convention=convention,
        inferred=inference is not None,
        tolerance=tolerance,
        breaks=pl.concat([continuity_breaks, checks], how="vertical_relaxed"),
        summary=summary,
        breakdown=breakdown,
        ambiguous_ties=ambiguous,
    )


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
