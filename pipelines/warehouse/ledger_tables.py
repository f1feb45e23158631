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
            "BLAKE2b-128 of the canonical text of every spec field (see README: identity rule).",
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

QUARANTINE = Table(
    "quarantine",
    "Entries fetched but not landed because they broke a validation rule: nothing is dropped "
    "silently. A sync replaces the quarantine rows of the days it covers, as for the ledger.",
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
            doc="UTC day the row belongs to (a sync over that day replaces it): the day of "
            "createdAt when readable and inside the window, else the window's first day.",
        ),
        *_page("Page the entry came from.", "0-based position in that page."),
        Column("reason", "VARCHAR", "The rule the entry broke, in words.", True),
        Column("raw_json", "VARCHAR", "The entry as received, numbers exact.", True),
    ),
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
