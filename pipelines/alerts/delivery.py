"""Sending the outbox: claimed first, sent through Apprise, recorded after; never a failed sync.

A channel's URL carries its token, so it is read from its variable (``url_env``) at the moment
of sending and goes nowhere else: not into DuckDB (the outbox names the channel), nor a log
(Apprise's own logging is silenced while it sends), nor an error (every line is scrubbed of the
URL's spellings with the keys' scrubber). A channel that does not take a message keeps it in
the outbox, retried on later runs after a backoff, and is one warning line per channel.

A message may carry files (a month's statement): the layer that queued it gives the sender a
``Files`` provider, which renders them from what it stored, by the message's row; they are
written to a private temporary folder for Apprise, removed once sent, and attached on the
channels that take files (e-mail, json://); the others get the text, which says where the files
are. The alerts' own sender leaves such messages to that layer.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pipelines.alerts.messages import RESENT
from pipelines.api.redact import Redactor
from pipelines.config.alert_rules import Alerting, Channel
from pipelines.runtime.failpoints import failpoint
from pipelines.warehouse.alert_store import Claimed, claim, finish
from pipelines.warehouse.writer import Warehouse

LEASE = timedelta(minutes=10)  # a claim older than this was its sender's last act
FIRST_RETRY = timedelta(seconds=30)
LAST_RETRY = timedelta(hours=1)
PAYLOAD_ID = "creditlens_event_id"  # the message's id in a json:// payload
Attachment = tuple[str, bytes]  # (file name, content)
# The files of a claimed message, rendered again from what was stored: a resend is the same bytes.
Files = Callable[[Claimed], Sequence[Attachment]]


@dataclass
class Delivery:
    sent: list[tuple[str, str]] = field(default_factory=list)  # (event_id, channel)
    warnings: list[str] = field(default_factory=list)  # one line per channel that failed


def backoff(attempts: int) -> timedelta:
    """30 s after the first failure, doubling, at most an hour."""
    return min(FIRST_RETRY * 2 ** max(attempts - 1, 0), LAST_RETRY)


@contextmanager
def _apprise_quiet() -> Iterator[None]:
    """Apprise logs what it tries, hosts and paths included: nothing of it may reach a log."""
    logger = logging.getLogger("apprise")
    saved = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = saved


def send(
    url: str, title: str, body: str, event_id: str, attachments: Sequence[Attachment] = ()
) -> str | None:
    """None when the channel accepted the message, else why not (never the URL)."""
    # Imported here: Apprise loads its ~100 services (0.2 s), which every process that builds
    # the Dagster definitions would otherwise pay, sending or not.
    import apprise
    from apprise.plugins.custom_json import NotifyJSON

    with _apprise_quiet():
        try:
            plugin = apprise.Apprise.instantiate(url)
        except Exception:  # a malformed URL: a line, not a traceback
            plugin = None
        if plugin is None:
            return "its variable does not hold a URL Apprise knows (value not shown)"
        if isinstance(plugin, NotifyJSON):
            plugin.payload_extras[PAYLOAD_ID] = event_id
        plugin.request_rate_per_sec = 0  # one message at a time: no throttle to wait for
        with tempfile.TemporaryDirectory(prefix="creditlens-files-") as folder:
            attach = None
            if attachments and plugin.attachment_support:
                paths = []
                for name, content in attachments:
                    path = os.path.join(folder, os.path.basename(name))
                    with open(path, "wb") as file:
                        file.write(content)
                    paths.append(path)
                attach = apprise.AppriseAttachment(paths)
            try:
                accepted = plugin.notify(body=body, title=title, attach=attach)
            except Exception as exc:  # a channel never fails a sync
                return f"the channel failed ({type(exc).__name__})"
    return None if accepted else "the channel did not accept the message"


def _url(channel: Channel | None, name: str, env: Mapping[str, str]) -> tuple[str | None, str]:
    if channel is None:
        return None, f"no channel named {name} in the accounts file"
    url = env.get(channel.url_env, "").strip()
    if not url:
        return None, f"{channel.url_env} is not set: the channel's Apprise URL"
    return url, ""


def _files(files: Files | None, row: Claimed) -> tuple[Sequence[Attachment], str]:
    """The message's files, or why they could not be made (then it is not sent without them)."""
    if files is None:
        return (), ""
    try:
        return files(row), ""
    except Exception as exc:  # one message's files never stop the others
        why = " ".join(str(exc).split())
        return (), f"its files could not be made ({type(exc).__name__}: {why})"


def deliver(
    warehouse: Warehouse,
    alerting: Alerting,
    env: Mapping[str, str] | None = None,
    now: datetime | None = None,
    files: Files | None = None,
    label: str = "alerts",
) -> Delivery:
    """Sends every message due; what a channel does not take waits for a later run. With
    ``files``, the messages that carry files (and only those), each with its files."""
    env = os.environ if env is None else env
    now = now or datetime.now(UTC)
    me = f"{socket.gethostname()}:{os.getpid()}"
    rows = claim(warehouse.path, warehouse.lock_timeout_s, now, LEASE, me, files is not None)
    out = Delivery()
    sent: list[tuple[str, str, datetime]] = []
    failed: list[tuple[str, str, datetime, str]] = []
    problems: dict[str, tuple[str, int, datetime]] = {}
    for row in rows:
        url, problem = _url(alerting.channels.get(row.channel), row.channel, env)
        if url is not None:
            body = f"{row.body} {RESENT}" if row.resend else row.body
            attachments, problem = _files(files, row)
            if not problem:
                problem = send(url, row.title, body, row.event_id, attachments) or ""
            problem = Redactor([url]).scrub(problem)
        if not problem:
            sent.append((row.event_id, row.channel, datetime.now(UTC)))
            out.sent.append((row.event_id, row.channel))
            continue
        retry = now + backoff(row.attempts)
        failed.append((row.event_id, row.channel, retry, problem))
        _, count, _ = problems.get(row.channel, (problem, 0, retry))
        problems[row.channel] = (problem, count + 1, retry)
    if rows:
        failpoint("alert_sent")  # a sender killed here: sent, not recorded (docs/alerts.md)
        finish(warehouse.path, warehouse.lock_timeout_s, sent, failed)
    for name, (problem, count, retry) in problems.items():
        out.warnings.append(
            f"{label}: channel {name}: {count} message{'s' if count > 1 else ''} not delivered "
            f"({problem}); kept in the outbox, retried after {retry:%Y-%m-%d %H:%M:%S} UTC"
        )
    return out


def try_channel(alerting: Alerting, name: str, env: Mapping[str, str] | None = None) -> str | None:
    """Sends a test message to ``name``: None when accepted, else why not."""
    env = os.environ if env is None else env
    url, problem = _url(alerting.channels.get(name), name, env)
    if url is None:
        return problem
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    event_id = f"test-{stamp}"
    body = f"A test message from creditlens to channel {name} [creditlens alert {event_id}]"
    problem = send(url, f"creditlens test: channel {name}", body, event_id)
    return None if problem is None else Redactor([url]).scrub(problem)
