"""What a ledger sync writes: the entries, the quarantine, and one row per sync.

The entry's own columns come from its declared fields (pipelines/api/ledger_entry.py), so the
table cannot drift from what validation checks and hands over.
"""

from __future__ import annotations

from dataclasses import replace

from pipelines.api.ledger_entry import CREATED_AT, ENTRY_FIELDS, EXTRA_COLUMN, EXTRA_DOC
from pipelines.warehouse.table import (
    ACCOUNT,
    FETCHED_AT,
    RUN_ID,
    Column,
    Table,
    entry_column,
    span,
)
from transforms.identify import QUARANTINE_FINGERPRINT_SQL, quarantine_identified_sql

ENTRY_DAY = Column("entry_day", "DATE", "UTC day of created_at; the unit a sync replaces.", True)


def _entry_columns() -> tuple[Column, ...]:
    """The entry's fields in their declared order, its UTC day right after its createdAt."""
    columns: list[Column] = []
    for entry_field in ENTRY_FIELDS:
        columns.append(entry_column(entry_field))
        if entry_field is CREATED_AT:
            columns.append(ENTRY_DAY)
    return (*columns, Column(EXTRA_COLUMN, "VARCHAR", EXTRA_DOC))


def _page(number: str, position: str) -> tuple[Column, Column]:
    """Where in that window's pages the entry was: the order occurrences are numbered in."""
    return (
        Column("page_number", "INTEGER", number, True),
        Column("page_position", "INTEGER", position, True),
    )


LEDGER_ENTRIES = Table(
    "ledger_entries",
    "The credit ledger, one row per entry, exactly once: a sync replaces whole UTC days "
    "(account, entry_day) in one transaction. Amounts as the API gave them (see the sign "
    "convention in reconciliation outputs).",
    (
        ACCOUNT,
        Column(
            "entry_id",
            "VARCHAR",
            "Identity: fingerprint-occurrence. Unique per account; stable across reruns.",
            True,
        ),
        *_entry_columns(),
        Column(
            "fingerprint",
            "VARCHAR",
            "BLAKE2b-128 of the canonical text of every spec field (docs/analysts.md: exactly "
            "once without ids).",
            True,
        ),
        Column(
            "occurrence",
            "INTEGER",
            "1..n among entries of the same account and day with the same fingerprint.",
            True,
        ),
        RUN_ID,
        FETCHED_AT,
        *span(
            "window",
            "DATE",
            "First day of the API window the entry was read in.",
            "Last day (inclusive) of that window.",
            True,
        ),
        *_page(
            "pageNumber of the page the entry was read from.",
            "0-based position of the entry in that page.",
        ),
    ),
)

# Added by migration 7, so last and nullable in the DDL; the migration fills them on older rows.
QUARANTINE_IDENTITY = (
    Column(
        "fingerprint",
        "VARCHAR",
        "First 128 bits (hex) of SHA-256 over account and raw_json (docs/analysts.md: exactly "
        "once without ids).",
    ),
    Column("occurrence", "INTEGER", "1..n among the account's rows with the same fingerprint."),
    Column(
        "quarantine_id",
        "VARCHAR",
        "Identity: fingerprint-occurrence. Unique per account; stable across reruns and "
        "overlapping syncs, which replace every row of a fingerprint they read again.",
    ),
)

QUARANTINE = Table(
    "quarantine",
    "Entries fetched but not landed because they broke a validation rule: nothing is dropped "
    "silently. Exactly once, as for the ledger: a sync replaces the quarantine rows of the days "
    "it covers and every row of an entry it reads again (same fingerprint), whatever day an "
    "earlier sync filed it under; an entry is never in both tables for one day.",
    (
        ACCOUNT,
        RUN_ID,
        Column("quarantined_at", "TIMESTAMPTZ", "When the entry was quarantined (UTC).", True),
        *span(
            "window",
            "DATE",
            "First day of the API window read.",
            "Last day (inclusive) of the API window read.",
            True,
        ),
        replace(
            ENTRY_DAY,
            doc="UTC day the row belongs to (a sync over that day replaces it), always inside "
            "the window: the UTC day of createdAt when readable, else the calendar day its text "
            "names (a leap second's own day), else the window's first day.",
        ),
        *_page("Page the entry came from.", "0-based position in that page."),
        Column("reason", "VARCHAR", "The rule the entry broke, in words.", True),
        Column("raw_json", "VARCHAR", "The entry as received, numbers exact.", True),
        *QUARANTINE_IDENTITY,
    ),
)


def quarantine_identity_sql() -> tuple[str, ...]:
    """Names the rows of a warehouse older than the quarantine's identity, as a landing would.

    Those rows were filed once per overlapping sync; of the copies of one received entry, the
    latest sync's rows are kept, as the landing now keeps them, so an upgraded warehouse holds
    what a fresh sync of the same days would.
    """
    columns = ", ".join(c.name for c in QUARANTINE.columns)
    kept = (
        "(SELECT * FROM quarantine_before_identity QUALIFY run_id = arg_max(run_id, "
        f"quarantined_at) OVER (PARTITION BY account, {QUARANTINE_FINGERPRINT_SQL}))"
    )
    return (
        "CREATE TEMP TABLE quarantine_before_identity AS "
        "SELECT * EXCLUDE (fingerprint, occurrence, quarantine_id) FROM quarantine",
        "DELETE FROM quarantine",
        f"INSERT INTO quarantine ({columns}) SELECT {columns} "
        f"FROM ({quarantine_identified_sql(kept)})",
        "DROP TABLE quarantine_before_identity",
    )


SYNC_RUNS = Table(
    "sync_runs",
    "One row per ledger sync: what was fetched, landed and quarantined. Invariant: "
    "entries_fetched = entries_landed + entries_quarantined.",
    (
        ACCOUNT,
        RUN_ID,
        Column("started_at", "TIMESTAMPTZ", "Start of the sync (UTC).", True),
        Column("finished_at", "TIMESTAMPTZ", "When its transaction committed (UTC).", True),
        *span(
            "range", "DATE", "First UTC day replaced.", "Last UTC day replaced (inclusive).", True
        ),
        Column("windows", "INTEGER", "API windows read (at most 366 days each).", True),
        Column("pages", "INTEGER", "Ledger pages requested (including re-reads and probes).", True),
        Column("window_restarts", "INTEGER", "Windows re-read because pages drifted.", True),
        Column("requests", "INTEGER", "HTTP requests sent.", True),
        Column("retries", "INTEGER", "Requests retried after a transient failure.", True),
        Column("entries_fetched", "BIGINT", "Entries in the accepted reads.", True),
        Column("entries_landed", "BIGINT", "Entries written to ledger_entries.", True),
        Column("entries_quarantined", "BIGINT", "Entries written to quarantine.", True),
        Column("duration_s", "DOUBLE", "Wall time of the sync in seconds.", True),
    ),
)
