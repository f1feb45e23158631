"""What an incremental reconciliation carries from the run before it (migration 14).

The derived tables hold the chain and its findings; these two hold what they do not say: which
run wrote them, what they depend on (a fingerprint of the settings and snapshots that shape
them), and the tie groups left ambiguous on each day, so a reconciliation that keeps the days
before its boundary can still count every ambiguous group of the ledger.
"""

from __future__ import annotations

from pipelines.warehouse.finding_tables import CHECKED_AT
from pipelines.warehouse.table import ACCOUNT, RUN_ID, Column, Table

RECONCILIATION_CARRY = Table(
    "reconciliation_carry",
    "One row per account: the latest reconciliation that wrote its derived tables, and what "
    "the next one needs to start from the first day a sync touched instead of the first entry. "
    "Internal bookkeeping (since version 14).",
    (
        ACCOUNT,
        RUN_ID,
        CHECKED_AT,
        Column(
            "fingerprint",
            "VARCHAR",
            "Hash of what the derived rows depend on besides the entries: sign convention, "
            "tolerance, entry-type rules, history's first day, subscription and campaign "
            "snapshots, schema version. A different one forces a full reconciliation.",
            True,
        ),
        Column(
            "mode",
            "VARCHAR",
            "full or incremental; failed when a later reconciliation failed (the next is full).",
            True,
        ),
        Column("reconciled_from", "DATE", "First UTC day rewritten; null for a full pass."),
        Column("reason", "VARCHAR", "Why the pass was full, or where it started.", True),
        Column("last_day", "DATE", "UTC day of the last entry reconciled; null if none."),
    ),
    since=14,
)

AMBIGUOUS_TIE_DAYS = Table(
    "ambiguous_tie_days",
    "Tie groups (entries sharing a createdAt) whose order the balances leave open, counted per "
    "account and UTC day by the latest reconciliation; their sum is reconciliation_runs."
    "ambiguous_ties. Internal bookkeeping (since version 14).",
    (
        ACCOUNT,
        Column("day", "DATE", "UTC day of the tie groups.", True),
        Column("groups", "INTEGER", "Ambiguous tie groups that day.", True),
    ),
    since=14,
)
