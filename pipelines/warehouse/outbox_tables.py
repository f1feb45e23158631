"""The outbox as the warehouse keeps it: every message waiting for its channel, and what became
of it (docs/alerts.md, docs/statements.md).

One table for whatever creditlens sends: an alert's change and a closed statement wait in it
alike, each row naming what the message is about and the channel, never the channel's URL (it
stays in its variable). Until version 17 it was ``alert_outbox``, its subject ``alert_id``, though
month close queued its statements there too; analysts' queries of the old names keep working for
one release, through a view that is dropped in the next.
"""

from __future__ import annotations

from pipelines.warehouse.table import Column, Table, columns

# Everything but what a message is about, in the table's order after event_id and its subject.
_SENDING = (
    Column("channel", "VARCHAR", "The channel's name ([[channels]] name), never its URL.", True),
    Column(
        "status",
        "VARCHAR",
        "pending, sending (claimed), sent, or expired (an alert's message still unsent "
        "after CREDITLENS_ALERT_EXPIRY_HOURS: never sent; last_error says so).",
        True,
    ),
    *columns("VARCHAR", True, title="The message's title.", body="The message's text."),
    Column("attempts", "INTEGER", "Sends tried so far.", True),
    Column("enqueued_at", "TIMESTAMPTZ", "When the message was queued (UTC).", True),
    *columns(
        "TIMESTAMPTZ",
        next_attempt_at="Not sent again before this (backoff after a failure).",
        claimed_at="When a sender claimed it.",
        sent_at="When its channel accepted it.",
    ),
    *columns(
        "VARCHAR",
        claimed_by="Which sender claimed it (host and process).",
        last_error="Why the last attempt failed, in one line, never the URL.",
    ),
)

_SENDER = (
    "A sender claims rows (sending) in a write transaction before sending; a claim older than its "
    "lease is sent again, with the same event_id in its text."
)

# As migrations 12 to 16 made it: migration 12 creates it and 15 words it again; 17 renames it.
ALERT_OUTBOX_TABLE = Table(
    "alert_outbox",
    "Messages waiting for their channel, and what became of them: one row per alert change and "
    f"channel. {_SENDER}",
    (
        Column("event_id", "VARCHAR", "alert_events.event_id of the message.", True),
        Column("alert_id", "VARCHAR", "alert_events.alert_id.", True),
        *_SENDING,
    ),
    since=12,
)

MESSAGE_OUTBOX = Table(
    "message_outbox",
    "Messages waiting for their channel, and what became of them: one row per message and "
    "channel, an alert's change or a closed statement alike (alert_outbox before version 17). "
    f"{_SENDER}",
    (
        Column(
            "event_id",
            "VARCHAR",
            "The message's stable id, the same on a resend: alert_events.event_id for an alert's "
            "change, statement/ACCOUNT/YYYY-MM/vN for a close or restatement, "
            "statements/digest/... for a digest.",
            True,
        ),
        Column(
            "subject_id",
            "VARCHAR",
            "What the message is about: the alert (alert_events.alert_id), the account and month "
            "of a statement (statement/ACCOUNT/YYYY-MM), or the closes a digest covers "
            "(statements/digest: and them as JSON). alert_id before version 17.",
            True,
        ),
        *_SENDING,
    ),
    since=17,
)

# The old name, for one release: the view goes in the release after the one that made it.
_OLD_SUBJECT = Column(
    "alert_id",
    "VARCHAR",
    "message_outbox.subject_id under its name before version 17. Deprecated: use subject_id.",
    True,
)
_OLD_COLUMNS = (MESSAGE_OUTBOX.columns[0], _OLD_SUBJECT, *_SENDING)

ALERT_OUTBOX = Table(
    "alert_outbox",
    "Deprecated: message_outbox under its name before version 17 (subject_id as alert_id), kept "
    "so older queries still run; it is removed in the next release. Query message_outbox instead.",
    _OLD_COLUMNS,
    since=17,
    kind="view",
    view_sql=(
        "SELECT "
        + ", ".join("subject_id AS alert_id" if c is _OLD_SUBJECT else c.name for c in _OLD_COLUMNS)
        + " FROM message_outbox"
    ),
)
