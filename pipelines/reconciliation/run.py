"""Reconciling one account: read the landed tables, apply the transforms, write the results.

The rules are in transforms/ (pure polars); this module only moves data between them and the
warehouse, so the same rules can be tested on frames and run on the real file.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import polars as pl

from pipelines.warehouse.connection import frame
from pipelines.warehouse.writer import Warehouse
from transforms.aggregate import daily_balance
from transforms.cross_checks import CheckOutcome, breakdown_check, summary_check
from transforms.enrich import ledger_enriched
from transforms.entry_type import EntryTypeRules, type_meanings
from transforms.reconcile import reconcile

LEDGER_COLUMNS = (
    "account, entry_id, created_at, entry_type, amount, description, has_description, "
    "channel, agent_id, campaign_id, balance_after"
)


@dataclass(frozen=True)
class ReconcileOptions:
    sign_convention: str = "signed"
    tolerance: Decimal = Decimal(0)
    debit_type_pattern: str | None = None

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


def _rows(con: Any, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


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


def load(warehouse: Warehouse, account: str) -> tuple[pl.DataFrame, dict[str, Any]]:
    with warehouse.read() as con:
        ledger = frame(
            con, f"SELECT {LEDGER_COLUMNS} FROM ledger_entries WHERE account = ?", [account]
        )
        subscriptions = frame(
            con,
            "SELECT account, fetched_at, plan, status FROM subscription_snapshots "
            "WHERE account = ? AND shape_ok",
            [account],
        )
        campaigns = frame(
            con,
            "SELECT account, campaign_id, name FROM campaigns_current WHERE account = ?",
            [account],
        )
        summary = _rows(
            con,
            "SELECT balance FROM consumption_snapshots WHERE account = ? "
            "ORDER BY fetched_at DESC LIMIT 1",
            [account],
        )
        breakdown = _rows(
            con,
            "SELECT * FROM breakdown_snapshots WHERE account = ? AND fetched_at = "
            "(SELECT max(fetched_at) FROM breakdown_snapshots WHERE account = ?) "
            "ORDER BY item_index",
            [account, account],
        )
    return ledger, {
        "subscriptions": subscriptions,
        "campaigns": campaigns,
        "summary": _summary_doc(summary),
        "breakdown": _breakdown_doc(breakdown),
    }


def reconcile_account(
    warehouse: Warehouse, account: str, options: ReconcileOptions, run_id: str
) -> ReconciliationResult:
    ledger, context = load(warehouse, account)
    rules = options.rules()
    convention = options.sign_convention
    result = reconcile(ledger, convention=convention, tolerance=options.tolerance, rules=rules)
    ordered = result.ordered
    summary = summary_check(
        ordered, context["summary"], account=account, tolerance=options.tolerance
    )
    breakdown = breakdown_check(
        ordered, context["breakdown"], account=account, tolerance=options.tolerance, rules=rules
    )
    breaks = pl.concat([result.breaks, summary.breaks, breakdown.breaks], how="vertical_relaxed")
    checked_at = datetime.now(UTC)
    breaks_out = breaks.with_columns(
        pl.lit(run_id).alias("run_id"),
        pl.lit(checked_at, dtype=pl.Datetime("us", "UTC")).alias("checked_at"),
    )
    per_day = ordered.group_by("account", pl.col("created_at").dt.date().alias("day")).agg(
        pl.len().cast(pl.Int32).alias("entries")
    )
    daily = (
        daily_balance(ordered, rules)
        .join(per_day, on=["account", "day"], how="left")
        .with_columns(pl.lit(run_id).alias("run_id"))
    )
    meanings = type_meanings(ordered["entry_type"], rules).select("entry_type", "category")
    enriched = (
        ledger_enriched(ordered, context["subscriptions"], context["campaigns"])
        .join(meanings, on="entry_type", how="left", nulls_equal=True)
        .with_columns((pl.col("chain_position") - 1).alias("chain_position"))
    )
    enriched_cols = [
        "account", "entry_id", "chain_position", "created_at", "entry_type", "category",
        "amount", "signed_amount", "balance_before", "balance_after", "description", "channel",
        "agent_id", "campaign_id", "campaign_name", "plan", "status", "subscription_backfilled",
    ]  # fmt: skip
    inference = result.inference
    run_row = {
        "account": account,
        "run_id": run_id,
        "checked_at": checked_at,
        "sign_convention": result.convention,
        "sign_inferred": inference is not None,
        "pairs_explained_signed": inference.pairs_explained.get("signed") if inference else None,
        "pairs_explained_unsigned": inference.pairs_explained.get("unsigned")
        if inference
        else None,
        "tolerance": options.tolerance,
        "entries": ledger.height,
        "continuity_breaks": result.breaks.height,
        "ambiguous_ties": result.ambiguous_groups,
        "summary_status": summary.status,
        "summary_message": summary.message,
        "breakdown_status": breakdown.status,
        "breakdown_message": breakdown.message,
    }
    warehouse.replace_for_account(
        account,
        {
            "balance_breaks": breaks_out,
            "daily_balance": daily,
            "ledger_enriched": enriched.select(enriched_cols),
        },
        {"reconciliation_runs": [run_row]},
    )
    return ReconciliationResult(
        account=account,
        entries=ledger.height,
        convention=result.convention,
        inferred=inference is not None,
        tolerance=options.tolerance,
        breaks=breaks,
        summary=summary,
        breakdown=breakdown,
        ambiguous_ties=result.ambiguous_groups,
    )


def breaks_records(breaks: pl.DataFrame, limit: int = 50) -> list[dict[str, Any]]:
    """The breaks as JSON-ready records for Dagster metadata (capped; the table holds them all).

    Money and timestamps become their text, so nothing passes through float.
    """
    plain = (str, int, bool, type(None))
    return [
        {k: v if isinstance(v, plain) else str(v) for k, v in row.items()}
        for row in breaks.head(limit).iter_rows(named=True)
    ]
