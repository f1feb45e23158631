"""The warehouse schema: a public interface, versioned, documented in one place.

Analysts query the DuckDB file directly, so names and types here are promises. Each table is
described once, in the module of the job that writes it (ledger_tables, snapshot_tables,
audit_tables, reconciliation_tables, with the types in table.py): the DDL, the ``COMMENT ON``
statements and docs/data-dictionary.md are all generated from it. A change is a new migration
appended to ``MIGRATIONS``; an older warehouse upgrades in place, in order, each step in its own
transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.warehouse.alert_tables import (
    ALERT_EVENTS,
    ALERT_RULE_RUNS,
    ALERTS,
    ALERTS_OVER_ALERT_OUTBOX,
)
from pipelines.warehouse.analyst_tables import (
    CONSUMPTION,
    CONSUMPTION_DAILY,
    STATEMENT_LINES,
    utc_day,
    utc_month,
)
from pipelines.warehouse.audit_tables import KEY_AUDIT, KEY_AUDIT_FINDINGS
from pipelines.warehouse.carry_tables import AMBIGUOUS_TIE_DAYS, RECONCILIATION_CARRY
from pipelines.warehouse.finding_tables import (
    BREAK_ACKNOWLEDGEMENTS,
    BREAKDOWN_MISMATCHES,
    HIDDEN_MOVEMENTS,
    HISTORY_PROBED,
    LEDGER_HISTORY,
)
from pipelines.warehouse.ledger_tables import (
    LEDGER_ENTRIES,
    QUARANTINE,
    QUARANTINE_IDENTITY,
    SYNC_RUNS,
    quarantine_identity_sql,
)
from pipelines.warehouse.outbox_tables import ALERT_OUTBOX, ALERT_OUTBOX_TABLE, MESSAGE_OUTBOX
from pipelines.warehouse.outcome_tables import ACCOUNT_STATUS, SYNC_OUTCOMES
from pipelines.warehouse.reconciliation_tables import (
    BALANCE_BREAKS,
    BREAK_PLACEMENT,
    DAILY_BALANCE,
    ENRICHED_DAYS,
    LEDGER_CHAIN,
    LEDGER_ENRICHED,
    LEDGER_ENRICHED_TABLE,
    MONTHLY_STATEMENT,
    RECONCILED_FROM,
    RECONCILIATION_RUNS,
    RUN_FINDINGS,
)
from pipelines.warehouse.snapshot_tables import (
    BREAKDOWN_SNAPSHOTS,
    CAMPAIGNS,
    CAMPAIGNS_CURRENT,
    CONSUMPTION_SNAPSHOTS,
    SUBSCRIPTION_SNAPSHOTS,
)
from pipelines.warehouse.statement_tables import (
    CLOSED_STATEMENTS,
    LAKE_SNAPSHOT,
    STATEMENT_CHECKS,
    STATEMENT_CLOSES,
)
from pipelines.warehouse.statement_tables import TABLES as STATEMENT_TABLES
from pipelines.warehouse.table import Column, Table

__all__ = [
    "LEDGER_ENTRIES",
    "MIGRATIONS",
    "QUARANTINE",
    "SCHEMA_VERSION",
    "Migration",
    "all_tables",
    "latest_version",
]

SCHEMA_VERSION = Table(
    "schema_version",
    "Migrations applied to this warehouse, one row each.",
    (
        Column("version", "INTEGER", "Schema version reached.", True),
        Column("description", "VARCHAR", "What the migration did.", True),
        Column("applied_at", "TIMESTAMPTZ", "When it was applied (UTC).", True),
    ),
)


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    tables: tuple[Table, ...] = ()
    statements: tuple[str, ...] = ()


V1_TABLES = (
    LEDGER_ENTRIES,
    QUARANTINE,
    SYNC_RUNS,
    SUBSCRIPTION_SNAPSHOTS,
    CONSUMPTION_SNAPSHOTS,
    BREAKDOWN_SNAPSHOTS,
    CAMPAIGNS,
    CAMPAIGNS_CURRENT,
)

MIGRATIONS: list[Migration] = [
    Migration(1, "ledger, quarantine, sync runs and billing snapshots", V1_TABLES),
    Migration(2, "key-exposure audit", (KEY_AUDIT,)),
    Migration(
        3,
        "reconciliation: breaks, daily balance, monthly statement, enriched ledger",
        (
            BALANCE_BREAKS,
            DAILY_BALANCE,
            MONTHLY_STATEMENT,
            LEDGER_ENRICHED_TABLE,
            RECONCILIATION_RUNS,
        ),
    ),
    # The view's sums had DuckDB's widened types (DECIMAL(38,6), HUGEINT), not the documented
    # DECIMAL(18,6) and BIGINT; warehouses made before this re-create it with the casts.
    Migration(
        4,
        "monthly_statement returns its documented types",
        statements=(MONTHLY_STATEMENT.create_sql(), *MONTHLY_STATEMENT.comment_sql()),
    ),
    # The key audit's page listed no finding at all: each one, with where and what to do.
    Migration(5, "key-exposure audit findings", (KEY_AUDIT_FINDINGS,)),
    # History discovery, and one notion of hidden movement: every placement in balance_breaks
    # (with a stable id), breakdown mismatches apart (another unit), acknowledgements.
    Migration(
        6,
        "history discovery, hidden movements of every placement, acknowledgements",
        (LEDGER_HISTORY, BREAK_ACKNOWLEDGEMENTS, BREAKDOWN_MISMATCHES, HIDDEN_MOVEMENTS),
        statements=(
            *(BALANCE_BREAKS.add_column_sql(c) for c in BREAK_PLACEMENT),
            *(RECONCILIATION_RUNS.add_column_sql(c) for c in RUN_FINDINGS),
            "DELETE FROM balance_breaks WHERE kind = 'breakdown'",
            # The new columns' comments, and the changed wording of the tables.
            *(
                s
                for t in (BALANCE_BREAKS, DAILY_BALANCE, RECONCILIATION_RUNS)
                for s in t.comment_sql()
            ),
        ),
    ),
    # Overlapping syncs filed a rejected entry once per window start: the quarantine gets the
    # ledger's exactly-once identity, and older rows are named and deduplicated the same way.
    Migration(
        7,
        "quarantine: one identity per received entry, exactly once across overlapping syncs",
        statements=(
            *(QUARANTINE.add_column_sql(c) for c in QUARANTINE_IDENTITY),
            *quarantine_identity_sql(),
            *QUARANTINE.comment_sql(),
        ),
    ),
    # Analysts' first queries gave wrong answers (negative usage, a session-time-zone month, the
    # first plan carried back to days before it was seen): views that say the answer once.
    Migration(
        8,
        "analyst views: consumption, consumption_daily, statement_lines; UTC days; plans unknown "
        "before the first snapshot",
        (CONSUMPTION, CONSUMPTION_DAILY, STATEMENT_LINES),
        statements=(
            *(LEDGER_ENRICHED_TABLE.add_column_sql(c) for c in ENRICHED_DAYS),
            f"UPDATE ledger_enriched SET entry_day = {utc_day('created_at')}, "
            f"entry_month = {utc_month('created_at')}",
            "UPDATE ledger_enriched SET plan = NULL, status = NULL WHERE subscription_backfilled",
            *LEDGER_ENRICHED_TABLE.comment_sql(),
        ),
    ),
    # 100 KB descriptions ran reconciliation out of its memory bound: it no longer reads or
    # copies them; the enriched ledger becomes a view that joins them from ledger_entries.
    Migration(
        9,
        "ledger_enriched becomes a view over ledger_chain: descriptions stay in ledger_entries",
        (LEDGER_CHAIN, LEDGER_ENRICHED),
        statements=(
            "ALTER TABLE ledger_enriched RENAME TO ledger_chain",
            "ALTER TABLE ledger_chain DROP COLUMN description",
        ),
    ),
    # History discovery stopped early on a guess ("opens at zero") and lost what preceded a
    # quiet period: it now probes every window, and records what it probed and the quiet periods.
    Migration(
        10,
        "ledger_history: windows probed, entries counted, quiet periods, re-probed first day",
        statements=(
            *(LEDGER_HISTORY.add_column_sql(c) for c in HISTORY_PROBED),
            *LEDGER_HISTORY.comment_sql(),
        ),
    ),
    # An account that failed (a rejected key in discovery) was in no Dagster run and on no
    # page: each sync's outcome per account and step, and each account's latest state.
    Migration(
        11,
        "sync outcomes per account and step, and account_status",
        (SYNC_OUTCOMES, ACCOUNT_STATUS),
    ),
    # Nobody was told when a balance ran low or a spend jumped: alerts, their state (once per
    # crossing) and an outbox that loses nothing while a channel is down (docs/alerts.md).
    Migration(
        12,
        "alerts: alert_events, the alerts view, the outbox and each rule's evaluations",
        (ALERT_EVENTS, ALERT_OUTBOX_TABLE, ALERT_RULE_RUNS, ALERTS_OVER_ALERT_OUTBOX),
    ),
    # Finance's figures of a past month changed under them without notice: each month closed,
    # frozen, versioned, and restated line by line when a later sync changes it.
    Migration(
        13,
        "month close: statement_closes, their lines and totals, restatements, closed_statements",
        STATEMENT_TABLES,
    ),
    # Each sync re-derived the account's whole history: what the next reconciliation carries
    # in so it starts from the first day a sync touched (docs/reconciliation.md). A warehouse
    # upgraded to it has no carry, so its next reconciliation is a full one.
    Migration(
        14,
        "incremental reconciliation: reconciliation_carry and ambiguous_tie_days",
        (RECONCILIATION_CARRY, AMBIGUOUS_TIE_DAYS),
    ),
    # Event alerts piled up, firing forever: every alert now has an end (recovered, or closed
    # when an anomaly's days are over or a person closes it), and a message queued too long
    # ago expires instead of arriving weeks late.
    Migration(
        15,
        "alerts: closed alerts, expired messages; statements: several months closed at once",
        statements=(
            *ALERT_EVENTS.comment_sql(),
            *ALERT_OUTBOX_TABLE.comment_sql(),
            *ALERTS.comment_sql(),
            *STATEMENT_CLOSES.comment_sql(),
        ),
    ),
    # An agency's close check re-read every month of every company on every sync: each
    # reconciliation now records the first day it rewrote, and each check the reconciliation it
    # read, so the next reads only the months since (docs/statements.md).
    Migration(
        16,
        "month close: reconciliation_runs.reconciled_from, statement_checks",
        (STATEMENT_CHECKS,),
        statements=(
            RECONCILIATION_RUNS.add_column_sql(RECONCILED_FROM),
            *RECONCILIATION_RUNS.comment_sql(),
        ),
    ),
    # The alerts' outbox carried month close's statements too, under an alert's name: it is
    # named for what it carries, its alert_id for what a message is about. The old names stay
    # one release as a view, dropped by the next release's migration (outbox_tables.py).
    Migration(
        17,
        "message_outbox: alert_outbox renamed, its alert_id named subject_id; alert_outbox a "
        "deprecated view of it for one release",
        (MESSAGE_OUTBOX, ALERT_OUTBOX, ALERTS),
        statements=(
            "ALTER TABLE alert_outbox RENAME TO message_outbox",
            "ALTER TABLE message_outbox RENAME COLUMN alert_id TO subject_id",
            # Comments that pointed at README now point at the docs page that says the rule.
            *LEDGER_ENTRIES.comment_sql(),
            *QUARANTINE.comment_sql(),
            *ALERT_RULE_RUNS.comment_sql(),
        ),
    ),
    # On a lake, each close records the snapshot it read, so a restatement can be reproduced
    # by time travel (docs/lake.md).
    Migration(
        18,
        "statement_closes.lake_snapshot: the lake snapshot a close read",
        (CLOSED_STATEMENTS,),
        statements=(
            STATEMENT_CLOSES.add_column_sql(LAKE_SNAPSHOT),
            *STATEMENT_CLOSES.comment_sql(),
        ),
    ),
]


def all_tables() -> list[Table]:
    """Every table and view as it is now: a later migration's definition of a name replaces an
    earlier one (in the first one's place)."""
    tables: dict[str, Table] = {SCHEMA_VERSION.name: SCHEMA_VERSION}
    for migration in MIGRATIONS:
        for table in migration.tables:
            tables[table.name] = table
    return list(tables.values())


def latest_version() -> int:
    return MIGRATIONS[-1].version
