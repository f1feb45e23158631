"""What a FOCUS export reads: a month's entries and hidden movements of some accounts.

The entries come from ``ledger_enriched``, so each carries the sign and the category the
reconciliation gave it (the one entry-type rule, transforms/entry_type.py) and its campaign's
name; the hidden movements from ``hidden_movements``, counted in the month of ``observed_on`` as
``monthly_statement`` counts them, so an export ties out to the statement. The mapping to FOCUS
columns is transforms/focus.py's, pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import polars as pl

from pipelines.warehouse.connection import WarehouseError
from pipelines.warehouse.read import QueryError, frame, open_read_only, table_names

_IN = "account IN (SELECT unnest(?::VARCHAR[]))"

ENTRY_COLUMNS = (
    "account, entry_id, chain_position, created_at, entry_type, category, signed_amount, "
    "agent_id, campaign_id, campaign_name, channel, description"
)
# A hidden movement's anchor, the entry it follows (or precedes, before the first): what keeps
# its FOCUS id when later entries change its placement (and its break id).
HIDDEN_COLUMNS = (
    "account, break_id, observed_on, gap, detail, "
    "coalesce(before_entry_id, 'before:' || after_entry_id, break_id) AS anchor"
)


@dataclass(frozen=True)
class MonthLedger:
    """The month's rows of the accounts asked for, in chain order per account."""

    entries: pl.DataFrame
    hidden: pl.DataFrame


def read_month(
    path: Path, accounts: Sequence[str], month: date, *, lock_timeout_s: float
) -> MonthLedger:
    """``month`` is the first day of a UTC month; both frames are empty (with their columns)
    when nothing of it is in the warehouse."""
    following = date(month.year + month.month // 12, month.month % 12 + 1, 1)
    names = list(accounts)
    with open_read_only(path, lock_timeout_s) as con:
        present = table_names(con)
        if "ledger_enriched" not in present or "hidden_movements" not in present:
            raise WarehouseError(
                f"{path} has no reconciled ledger yet: run `creditlens sync` (it reconciles)"
            )
        try:
            entries = frame(
                con,
                f"SELECT {ENTRY_COLUMNS} FROM ledger_enriched WHERE {_IN} AND entry_month = ? "
                "ORDER BY account, chain_position",
                [names, month],
            )
            hidden = frame(
                con,
                f"SELECT {HIDDEN_COLUMNS} FROM hidden_movements WHERE {_IN} "
                "AND observed_on >= ? AND observed_on < ? ORDER BY account, observed_on, break_id",
                [names, month, following],
            )
        except QueryError as exc:
            raise WarehouseError(f"cannot read {path}: {exc}") from None
    return MonthLedger(entries, hidden)


def unsynced(path: Path, accounts: Sequence[str], *, lock_timeout_s: float) -> dict[str, str]:
    """Why each of ``accounts`` (none with data in the month asked for) has no data: it never
    synced (no entry at all, and no sync of it succeeded), or its latest sync failed (its
    line); an account synced and idle that month is not here."""
    if not accounts:
        return {}
    with open_read_only(path, lock_timeout_s) as con:
        status: dict[str, dict] = {}
        if "account_status" in table_names(con):
            status = {
                r["account"]: r
                for r in frame(
                    con,
                    f"SELECT account, status, last_failure FROM account_status WHERE {_IN}",
                    [list(accounts)],
                ).iter_rows(named=True)
            }
        landed = set(
            frame(
                con,
                f"SELECT DISTINCT account FROM ledger_entries WHERE {_IN}",
                [list(accounts)],
            )["account"].to_list()
        )
    out = {}
    for account in accounts:
        row = status.get(account)
        if row is not None and row["status"] in ("failing", "never synced") and row["last_failure"]:
            out[account] = f"its latest sync failed ({row['last_failure']})"
        elif account not in landed and (row is None or row["status"] == "never synced"):
            out[account] = "it never synced"
    return out
