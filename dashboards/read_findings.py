"""Reading what the reconciliation found: hidden movements, breakdown mismatches, where the
history begins, and the run that found them, each with what people acknowledged.

Movements and mismatches are read apart and stay apart: a movement is a balance change, a
mismatch is credits of usage, and a page that summed them would add two different units.
A warehouse from before version 6 has no ``hidden_movements`` view, no ``breakdown_mismatches``
and no ``ledger_history``: its findings are read from ``balance_breaks`` as they were stored
then (breakdown rows included, without ids or acknowledgements), so an older warehouse still
shows what it holds rather than nothing.
"""

from __future__ import annotations

from dashboards import model
from pipelines.warehouse.finding_tables import BREAKDOWN_FINDINGS_SQL
from pipelines.warehouse.read import ReadConnection
from pipelines.warehouse.read import rows as _rows
from transforms.breaks import placement_sql

_ACK = "acknowledged, acknowledged_reason, acknowledged_by, acknowledged_at"
_MOVEMENT_ORDER = (
    "ORDER BY coalesce(break_end, break_start, checked_at), "
    "CASE placement WHEN 'before_first' THEN 0 WHEN 'after_last' THEN 2 ELSE 1 END, break_id"
)
# balance_breaks before version 6 stored no placement: the one rule gives it.
_LEGACY_PLACEMENT = placement_sql()
RUN_COLUMNS = (
    "checked_at, sign_convention, sign_inferred, pairs_explained_signed, "
    "pairs_explained_unsigned, tolerance, entries, continuity_breaks, ambiguous_ties, "
    "summary_status, summary_message, breakdown_status, breakdown_message"
)
# Added by migration 6; read only where the warehouse has them.
RUN_FINDING_COLUMNS = (
    "hidden_movements",
    "hidden_gross",
    "hidden_net",
    "unacknowledged",
    "opening_status",
    "opening_message",
)


def column_names(con: ReadConnection, table: str) -> set[str]:
    """The columns ``table`` has in this warehouse: migrations add some to older tables."""
    found = _rows(
        con, "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
    )
    return {r[0] for r in found}


def movements(con: ReadConnection, tables: set[str], name: str) -> list[model.Break]:
    """Every hidden movement of the account's latest reconciliation, in the order it happened."""
    if "hidden_movements" in tables:
        found = _rows(
            con,
            "SELECT break_id, placement, observed_on, break_start, break_end, expected_balance, "
            "observed_balance, gap, before_entry_id, after_entry_id, ambiguous, detail, "
            f"checked_at, {_ACK} FROM hidden_movements WHERE account = ? {_MOVEMENT_ORDER}",
            [name],
        )
        return [
            model.Break(r[0], r[1] or "unplaced", *r[2:13], bool(r[13]), *r[14:]) for r in found
        ]
    if "balance_breaks" not in tables:
        return []
    found = _rows(
        con,
        f"SELECT NULL AS break_id, {_LEGACY_PLACEMENT} AS placement, NULL, break_start, "
        "break_end, expected_balance, observed_balance, gap, before_entry_id, after_entry_id, "
        "ambiguous, detail, checked_at FROM balance_breaks "
        f"WHERE account = ? AND kind <> 'breakdown' {_MOVEMENT_ORDER}",
        [name],
    )
    return [model.Break(*r) for r in found]


def mismatches(con: ReadConnection, tables: set[str], name: str) -> list[model.Mismatch]:
    """The current period's breakdown items that differ from the ledger's debits."""
    if "breakdown_mismatches" in tables:
        acknowledged = (
            BREAKDOWN_FINDINGS_SQL
            if "break_acknowledgements" in tables
            else "SELECT *, false AS acknowledged, NULL AS acknowledged_reason, "
            "NULL AS acknowledged_by, NULL AS acknowledged_at FROM breakdown_mismatches"
        )
        found = _rows(
            con,
            "SELECT break_id, period_start, period_end, agent_id, campaign_id, channel, "
            f"ledger_credits, breakdown_credits, difference, detail, checked_at, {_ACK} "
            f"FROM ({acknowledged}) WHERE account = ? "
            "ORDER BY abs(difference) DESC, agent_id, campaign_id, channel, break_id",
            [name],
        )
        return [model.Mismatch(*r[:11], bool(r[11]), *r[12:]) for r in found]
    if "balance_breaks" not in tables:
        return []
    found = _rows(
        con,
        "SELECT NULL, break_start, break_end, agent_id, campaign_id, channel, expected_balance, "
        "observed_balance, gap, detail, checked_at FROM balance_breaks "
        "WHERE account = ? AND kind = 'breakdown' "
        "ORDER BY abs(gap) DESC, agent_id, campaign_id, channel",
        [name],
    )
    return [model.Mismatch(*r) for r in found]


def history(con: ReadConnection, tables: set[str], name: str) -> model.LedgerHistory | None:
    """What the latest history discovery of the account found, if any ran."""
    if "ledger_history" not in tables:
        return None
    found = _rows(
        con,
        "SELECT discovered_at, first_day, first_entry_at, opening_balance, decided_by, "
        "searched_back_to, history_limit, requests, detail FROM ledger_history "
        "WHERE account = ? ORDER BY discovered_at DESC LIMIT 1",
        [name],
    )
    return model.LedgerHistory(*found[0]) if found else None


def reconciliation(
    con: ReadConnection, tables: set[str], name: str
) -> model.ReconciliationRun | None:
    """The account's latest run, with the findings' totals where the warehouse records them."""
    if "reconciliation_runs" not in tables:
        return None
    present = column_names(con, "reconciliation_runs")
    extra = [c for c in RUN_FINDING_COLUMNS if c in present]
    columns = ", ".join([RUN_COLUMNS, *extra])
    found = _rows(
        con,
        f"SELECT {columns} FROM reconciliation_runs WHERE account = ? "
        "ORDER BY checked_at DESC LIMIT 1",
        [name],
    )
    if not found:
        return None
    head = found[0][: -len(extra)] if extra else found[0]
    named = dict(zip(extra, found[0][len(head) :], strict=True))
    return model.ReconciliationRun(*head, **named)
