"""A channel's sending side: its URL, read from its variable at the moment of sending, and a
test message to it.

The accounts file names a channel's VARIABLE (``url_env``, parsed in
pipelines/config/alert_rules.py), never its URL, which carries its token: the URL is read here,
only when a message goes, handed to the sender and scrubbed from any line that could carry it.
What goes wrong names the variable and why, never its value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime

from pipelines.api.redact import Redactor
from pipelines.config.alert_rules import Alerting, Channel
from pipelines.notify.apprise_sender import send
from pipelines.notify.message import id_line


def channel_url(
    channel: Channel | None, name: str, env: Mapping[str, str]
) -> tuple[str | None, str]:
    """The URL of the channel named ``name`` (``channel``, None when the file has no such
    channel), or None and why not."""
    if channel is None:
        return None, f"no channel named {name} in the accounts file"
    url = env.get(channel.url_env, "").strip()
    if not url:
        return None, f"{channel.url_env} is not set: the channel's Apprise URL"
    return url, ""


def try_channel(alerting: Alerting, name: str, env: Mapping[str, str] | None = None) -> str | None:
    """Sends a test message to ``name``: None when accepted, else why not (its variable named)."""
    env = os.environ if env is None else env
    channel = alerting.channels.get(name)
    url, problem = channel_url(channel, name, env)
    if url is None or channel is None:
        return problem
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    event_id = f"test-{stamp}"
    body = f"A test message from creditlens to channel {name}.\n\n{id_line('alert', event_id)}"
    problem = send(url, f"creditlens test: channel {name}", body, event_id)
    return None if problem is None else Redactor([url]).scrub(f"{channel.url_env}: {problem}")
