"""What every message shares, an alert's or a statement's: Markdown, a figure a line, its stable
id last, a note when it is sent again, and the kind the service is told.

A message is Markdown, one line per figure: chat services (Slack, Mattermost, Teams) render it as
it is, and the sender has Apprise turn it into HTML with a text part for e-mail
(pipelines/notify/apprise_sender.py), so every reader gets lines, not one paragraph.

Every message carries its ``event_id`` in its text (and, on ``json://``, in its payload): a
sender that crashed between sending and recording sends again with the same id, so a reader or
a receiving system can tell a resend from a new message (docs/alerts.md).
"""

from __future__ import annotations

RESENT = (
    "(sent again: an earlier attempt may have been delivered before its sender stopped; "
    "same message id)"
)


def id_line(what: str, event_id: str) -> str:
    """The last line of every message, ``[creditlens alert al-.../1]``: the id a receiver keeps
    to drop a resend, after what it is (``alert``, ``statement``)."""
    return f"[creditlens {what} {event_id}]"


def item(label: str, value: str) -> str:
    """One figure as a Markdown list item: a chat service and e-mail both show it as a line."""
    return f"- {label}: {value}"


def as_sent(body: str, resend: bool) -> str:
    """The text a message is sent with: its own, and on a resend a last line saying so."""
    return f"{body}\n\n{RESENT}" if resend else body


def notify_type(state: str | None, severity: str | None) -> str:
    """The kind Apprise gives the service (its colour, its icon), from an alert change's
    ``state`` and ``severity``: failure for an ERROR alert, warning for a WARN one, success for
    a recovery, info for the rest (statements and test messages, which have no state)."""
    if state is None:
        return "info"
    if state == "recovered":
        return "success"
    return "failure" if severity == "error" else "warning"
