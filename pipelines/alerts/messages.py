"""The words of a message: what crossed, by how much, why, what to do next, and the stable id.

A message is Markdown, one line per figure: chat services (Slack, Mattermost, Teams) render it as
it is, and the sender has Apprise turn it into HTML with a text part for e-mail
(pipelines/alerts/delivery.py), so every reader gets lines, not one paragraph.

Every message carries its ``event_id`` in its text (and, on ``json://``, in its payload): a
sender that crashed between sending and recording sends again with the same id, so a reader or
a receiving system can tell a resend from a new alert (docs/alerts.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from dashboards.paths import overview
from pipelines.alerts.observe import RECOVERED, Observation

RESENT = (
    "(sent again: an earlier attempt may have been delivered before its sender stopped; "
    "same message id)"
)


def id_line(event_id: str) -> str:
    """The last line of every message: the id a receiver keeps to drop a resend."""
    return f"[creditlens alert {event_id}]"


def message(
    obs: Observation,
    state: str,
    event_id: str,
    *,
    site: str = "",
    also: Sequence[str] = (),
) -> tuple[str, str]:
    """The title and the Markdown text of a change. ``site``: where the report site is (its
    URL, or its folder), to name the account's page; ``also``: the other levels of a budget
    crossed in the same evaluation, said in this one message."""
    what = f"{obs.rule.name} ({obs.rule.kind})"
    where = obs.account + (f", {obs.value}" if obs.value else "")
    verb = "recovered" if state == RECOVERED else obs.severity.upper()
    title = f"creditlens {verb}: {obs.rule.name} on {where}"
    lines = [f"**{verb}: {what} for account {where}**", "", obs.evidence, ""]
    lines += [f"- {label}: {value}" for label, value in obs.figures]
    if also:
        lines.append(f"- Also crossed: {', '.join(also)}")
    if obs.figures or also:
        lines.append("")
    if obs.next_step:
        lines += [f"**Next:** {obs.next_step}", ""]
    if site:
        lines += [f"Report: {site.rstrip('/')}/{overview(obs.account)}", ""]
    lines.append(id_line(event_id))
    return title, "\n".join(lines)
