"""What each sync did for each account, step by step: the one record of which account failed.

An agency's sync covers many companies, and one of them failing (a rejected key in history
discovery, an unreachable host in the ledger, a bug in its reconciliation) must not vanish
between runs: the CLI prints it, but Dagster only ever saw the accounts that reached its runs,
and the site only the accounts with data. Every step writes one row per account here, ok,
failed (with its one line) or skipped (an earlier step failed), and the CLI, the site and the
ledger's ``accounts_synced`` check read it back, through ``account_status`` for the latest state.
"""

from __future__ import annotations

from pipelines.warehouse.table import ACCOUNT, Column, Table, columns

# The steps of a sync, in order; every row names one.
STEPS = ("settings", "discovery", "ledger", "snapshots", "reconciliation")
RESULTS = ("ok", "failed", "skipped")

SYNC_OUTCOMES = Table(
    "sync_outcomes",
    "Each sync's outcome per account and step (settings, discovery, ledger, snapshots, "
    "reconciliation): ok, failed with the error's one line, or skipped because an earlier step "
    "of the account failed. Append-only; a sync of several runs shares one sync_id.",
    (
        Column(
            "sync_id",
            "VARCHAR",
            "The sync: one `creditlens sync` (all its runs), or the Dagster run id of a run "
            "launched from the UI or a schedule.",
            True,
        ),
        ACCOUNT,
        Column(
            "step", "VARCHAR", "settings, discovery, ledger, snapshots or reconciliation.", True
        ),
        Column("recorded_at", "TIMESTAMPTZ", "When the step ended for the account (UTC).", True),
        Column("result", "VARCHAR", "ok, failed or skipped.", True),
        *columns(
            "VARCHAR",
            part="What within the step, when it has parts (the snapshot table); else NULL.",
            error="The failure's one line (`account NAME: step: ...`), as the CLI prints it; "
            "NULL unless failed. Never a key: API text is scrubbed before it gets here.",
            run_id="Dagster run id of the step; NULL for the steps the CLI runs before its runs "
            "(settings, discovery).",
        ),
    ),
    since=11,
)

_PER_SYNC = (
    "SELECT account, sync_id, max(recorded_at) AS ended_at, "
    "bool_or(result = 'failed') AS failed, "
    "bool_or(step = 'ledger' AND result = 'ok') AS landed "
    "FROM sync_outcomes GROUP BY account, sync_id"
)
_SUCCESSES = (
    "SELECT account, max(ended_at) AS at, arg_max(sync_id, ended_at) AS sync_id "
    f"FROM ({_PER_SYNC}) WHERE landed AND NOT failed GROUP BY account"
)
_FAILURES = (
    "SELECT account, max(recorded_at) AS at, arg_max(step, recorded_at) AS step, "
    "arg_max(error, recorded_at) AS error, arg_max(sync_id, recorded_at) AS sync_id "
    "FROM sync_outcomes WHERE result = 'failed' GROUP BY account"
)

ACCOUNT_STATUS = Table(
    "account_status",
    "Per account that any sync recorded (sync_outcomes): its last successful sync, its last "
    "failure and its line, and its status now. An account of the accounts file that is absent "
    "here was never synced.",
    (
        ACCOUNT,
        Column(
            "status",
            "VARCHAR",
            "ok (the last sync succeeded), failing (a failure since the last success) or never "
            "synced (no sync of it succeeded yet).",
            True,
        ),
        Column(
            "last_success_at",
            "TIMESTAMPTZ",
            "End of its last sync that landed its ledger with no step failed; NULL if none.",
        ),
        Column("last_success_sync_id", "VARCHAR", "That sync's id."),
        Column("last_failure_at", "TIMESTAMPTZ", "When its last failed step ended; NULL if none."),
        Column("last_failure_step", "VARCHAR", "The step that failed then."),
        Column("last_failure", "VARCHAR", "Its one line (`account NAME: step: ...`)."),
        Column("last_failure_sync_id", "VARCHAR", "That sync's id."),
    ),
    since=11,
    kind="view",
    view_sql=(
        "SELECT a.account, CASE WHEN s.at IS NULL THEN 'never synced' "
        "WHEN f.at > s.at THEN 'failing' ELSE 'ok' END AS status, "
        "s.at AS last_success_at, s.sync_id AS last_success_sync_id, "
        "f.at AS last_failure_at, f.step AS last_failure_step, f.error AS last_failure, "
        "f.sync_id AS last_failure_sync_id "
        "FROM (SELECT DISTINCT account FROM sync_outcomes) a "
        f"LEFT JOIN ({_SUCCESSES}) s USING (account) "
        f"LEFT JOIN ({_FAILURES}) f USING (account)"
    ),
)
