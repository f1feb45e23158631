"""The words of a message: what crossed, by how much, why, and the stable id to quote.

Every message carries its ``event_id`` in its text (and, on ``json://``, in its payload): a
sender that crashed between sending and recording sends again with the same id, so a reader or
a receiving system can tell a resend from a new alert (docs/alerts.md).
"""

from __future__ import annotations

from pipelines.alerts.observe import Observation

RESENT = (
    "(sent again: an earlier attempt may have been delivered before its sender stopped; "
    "same message id)"
)


def message(obs: Observation, state: str, event_id: str) -> tuple[str, str]:
    """The title and the text of a change."""
    what = f"{obs.rule.name} ({obs.rule.kind})"
    where = obs.account + (f", {obs.value}" if obs.value else "")
    verb = "recovered" if state == "recovered" else obs.severity.upper()
    title = f"creditlens {verb}: {obs.rule.name} on {where}"
    body = f"{verb}: {what} for account {where}: {obs.evidence} [creditlens alert {event_id}]"
    return title, body
