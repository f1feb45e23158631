"""Alerts as the warehouse keeps them: every change of every alert, its current state, and
where its messages went (docs/alerts.md); the messages wait in the outbox (outbox_tables.py).

Append-only events make "once per crossing" checkable after the fact: a crossing is one
``firing`` row, a recovery one ``recovered`` row, whatever the number of evaluations.
"""

from __future__ import annotations

from dataclasses import replace

from pipelines.warehouse.outbox_tables import ALERT_OUTBOX_TABLE, MESSAGE_OUTBOX
from pipelines.warehouse.table import ACCOUNT, MONEY, Column, Table, columns

STATES = ("firing", "recovered", "closed", "baseline", "acknowledged")

ALERT_EVENTS = Table(
    "alert_events",
    "Every change of every alert, never rewritten: a threshold crossed (firing), recovered past "
    "its margin, a failed sync followed by a success or a hidden movement's finding acknowledged "
    "or gone (recovered), an anomaly past its open days or an event closed by `creditlens alerts "
    "ack` (closed), an event seen at a rule's first evaluation and not sent (baseline), or an "
    "acknowledgement (`creditlens alerts ack`).",
    (
        Column(
            "event_id",
            "VARCHAR",
            "alert_id/seq: the stable id every message carries, the same on a resend.",
            True,
        ),
        Column(
            "alert_id",
            "VARCHAR",
            "Stable id of the alert: rule x account x dimension value (x the event for event "
            "kinds); give it to `creditlens alerts ack`.",
            True,
        ),
        Column("seq", "INTEGER", "The change's number within its alert, from 1.", True),
        *columns(
            "VARCHAR",
            True,
            rule="The rule's name ([[alerts]] name).",
            kind="balance_below, runway_below, budget, spend_anomaly, hidden_movement, "
            "sync_failed or stale.",
        ),
        ACCOUNT,
        Column(
            "dimension_value",
            "VARCHAR",
            "What within the account: an agent, campaign or channel (`agent agt_1`), a budget "
            "level (`80%`, `100%`, `projected`), an anomaly's value and day (`agent agt_1 on "
            "2026-11-02`); NULL for the account as a whole (and for a hidden movement, whose "
            "break_id is in the evidence).",
        ),
        Column("state", "VARCHAR", "firing, recovered, closed, baseline or acknowledged.", True),
        Column("measured", MONEY, "The value measured: credits, days or hours."),
        Column("threshold", MONEY, "The threshold it was measured against."),
        Column("severity", "VARCHAR", "error (balance, runway, sync) or warn.", True),
        Column("evidence", "VARCHAR", "Why, in one sentence, as the message says it.", True),
        Column("occurred_at", "TIMESTAMPTZ", "When the change was recorded (UTC).", True),
        *columns(
            "VARCHAR",
            reason="Why it was acknowledged (--reason); NULL otherwise.",
            acted_by="Who acknowledged it: user@host; NULL otherwise.",
        ),
    ),
    since=12,
)

ALERT_RULE_RUNS = Table(
    "alert_rule_runs",
    "Where each rule's evaluation starts from, per account: its first evaluation (which "
    "reports the present only), and each new last day spend anomalies were judged up to.",
    (
        Column("rule", "VARCHAR", "The rule's name.", True),
        ACCOUNT,
        Column("evaluated_at", "TIMESTAMPTZ", "When (UTC).", True),
        Column(
            "data_day",
            "DATE",
            "The last UTC day judged for spend anomalies: over by the grace, on the platform's "
            "clock, both now and at the account's last successful sync (docs/alerts.md).",
        ),
    ),
    since=12,
)

_LATEST = "QUALIFY row_number() OVER (PARTITION BY alert_id ORDER BY seq DESC) = 1"


def _alerts_sql(outbox: str, subject: str) -> str:
    """The alerts view over the outbox table ``outbox``, whose ``subject`` column holds the
    alert_id of an alert's messages."""
    return (
        "SELECT e.alert_id, e.rule, e.kind, e.account, e.dimension_value, e.state, e.measured, "
        "e.threshold, e.severity, e.evidence, f.since, e.occurred_at AS changed_at, "
        "a.alert_id IS NOT NULL AS acknowledged, a.reason AS ack_reason, "
        "a.acted_by AS acknowledged_by, d.delivered, coalesce(d.pending, 0) AS pending "
        f"FROM (SELECT * FROM alert_events WHERE state <> 'acknowledged' {_LATEST}) e "
        "LEFT JOIN (SELECT alert_id, seq, reason, acted_by FROM alert_events "
        f"WHERE state = 'acknowledged' {_LATEST}) a ON a.alert_id = e.alert_id AND a.seq > e.seq "
        "LEFT JOIN (SELECT alert_id, min(occurred_at) AS since FROM alert_events "
        "GROUP BY alert_id) f ON f.alert_id = e.alert_id "
        f"LEFT JOIN (SELECT {subject} AS alert_id, string_agg(CASE WHEN status = 'sent' THEN "
        "channel || ' ' || strftime(sent_at, '%Y-%m-%dT%H:%M:%SZ') END, ', ' ORDER BY sent_at) "
        "AS delivered, count(*) FILTER (WHERE status <> 'sent') AS pending "
        f"FROM {outbox} GROUP BY {subject}) d ON d.alert_id = e.alert_id"
    )


ALERTS = Table(
    "alerts",
    "Every alert's current state (alert_events): firing or recovered, whether acknowledged "
    "since its latest change, and where and when its messages were delivered.",
    (
        Column("alert_id", "VARCHAR", "Stable id (`creditlens alerts ack`).", True),
        *columns("VARCHAR", True, rule="The rule's name.", kind="The rule's kind."),
        ACCOUNT,
        Column("dimension_value", "VARCHAR", "What within the account (alert_events)."),
        Column("state", "VARCHAR", "firing, recovered, closed or baseline (seen, not sent).", True),
        Column("measured", MONEY, "The latest value measured."),
        Column("threshold", MONEY, "Its threshold."),
        Column("severity", "VARCHAR", "error or warn.", True),
        Column("evidence", "VARCHAR", "The latest change's sentence.", True),
        Column("since", "TIMESTAMPTZ", "When the alert first fired (UTC).", True),
        Column("changed_at", "TIMESTAMPTZ", "When it last changed (UTC).", True),
        Column("acknowledged", "BOOLEAN", "Acknowledged since its latest change.", True),
        *columns(
            "VARCHAR",
            ack_reason="Why (--reason).",
            acknowledged_by="Who: user@host.",
            delivered="Channels that took its messages and when, e.g. `ops 2026-11-02T08:00:00Z`.",
        ),
        Column("pending", "BIGINT", "Its messages still waiting in the outbox.", True),
    ),
    since=12,
    kind="view",
    view_sql=_alerts_sql(MESSAGE_OUTBOX.name, "subject_id"),
)

# As migration 12 made it, over the outbox's old name; migration 17 makes it read message_outbox.
ALERTS_OVER_ALERT_OUTBOX = replace(
    ALERTS, view_sql=_alerts_sql(ALERT_OUTBOX_TABLE.name, "alert_id")
)
