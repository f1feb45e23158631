"""The words of an alert's message: what crossed, by how much, why, what to do next, and the
stable id.

Markdown, a figure a line, its id last, as every message creditlens sends
(pipelines/notify/message.py): a reader or a receiving system tells a resend from a new alert by
its ``event_id`` (docs/alerts.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from dashboards.paths import overview
from pipelines.alerts.observe import RECOVERED, Observation
from pipelines.notify.message import id_line, item


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
    lines += [item(label, value) for label, value in obs.figures]
    if also:
        lines.append(item("Also crossed", ", ".join(also)))
    if obs.figures or also:
        lines.append("")
    if obs.next_step:
        lines += [f"**Next:** {obs.next_step}", ""]
    if site:
        lines += [f"Report: {site.rstrip('/')}/{overview(obs.account)}", ""]
    lines.append(id_line("alert", event_id))
    return title, "\n".join(lines)
