"""Each account's open findings as its latest reconciliation left them.

A run narrowed to some accounts (``creditlens sync --account acme``) still evaluates every
check for every account of the accounts file: the others' verdicts are read here, from what the
warehouse holds, so the check's latest evaluation in the UI shows every company
(pipelines/reconciliation/assets.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipelines.warehouse.finding_tables import BREAKDOWN_FINDINGS_SQL
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.read import open_read_only, rows, table_names


@dataclass(frozen=True)
class OpenFindings:
    """Unacknowledged findings of one account: hidden movements of every placement, those
    after the last entry (against the platform's balance), and breakdown mismatches."""

    account: str
    hidden: int = 0
    summary: int = 0
    breakdown: int = 0
    last_run_id: str | None = None  # its latest reconciliation; None if never reconciled


def open_findings(
    path: Path, accounts: Sequence[str], *, lock_timeout_s: float
) -> dict[str, OpenFindings]:
    """Each of ``accounts``' open findings, one query per view whatever their number."""
    wanted = list(accounts)
    if not wanted or not warehouse_exists(path):
        return {a: OpenFindings(a) for a in wanted}
    where = "account IN (SELECT unnest(?::VARCHAR[])) AND NOT acknowledged"
    with open_read_only(path, lock_timeout_s) as con:
        present = table_names(con)
        hidden: dict[str, tuple[int, int]] = {}
        if "hidden_movements" in present:
            sql = (
                "SELECT account, count(*), count(*) FILTER (placement = 'after_last') "
                f"FROM hidden_movements WHERE {where} GROUP BY account"
            )
            hidden = {str(a): (int(n), int(s)) for a, n, s in rows(con, sql, [wanted])}
        mismatches: dict[str, int] = {}
        if "breakdown_mismatches" in present:
            sql = (
                f"SELECT account, count(*) FROM ({BREAKDOWN_FINDINGS_SQL}) WHERE {where} "
                "GROUP BY account"
            )
            mismatches = {str(a): int(n) for a, n in rows(con, sql, [wanted])}
        runs: dict[str, str] = {}
        if "reconciliation_runs" in present:
            sql = (
                "SELECT account, arg_max(run_id, checked_at) FROM reconciliation_runs "
                "WHERE account IN (SELECT unnest(?::VARCHAR[])) GROUP BY account"
            )
            runs = {str(a): str(r) for a, r in rows(con, sql, [wanted])}
    return {
        a: OpenFindings(a, *hidden.get(a, (0, 0)), mismatches.get(a, 0), runs.get(a))
        for a in wanted
    }
