"""Sending the outbox: claimed first, sent through Apprise, recorded after; never a failed sync.

A channel's URL carries its token, so it is read from its variable (``url_env``) at the moment
of sending and goes nowhere else: not into DuckDB (the outbox names the channel), nor a log
(Apprise's own logging is silenced while it sends), nor an error (every line is scrubbed of the
URL's spellings with the keys' scrubber). A channel that does not take a message keeps it in
the outbox, retried on later runs after a backoff, and is one warning line per channel naming
its variable and why (never its value); a channel that refused once is not tried again in the
same run.

Every run has a deadline (short inside a sync, longer for ``creditlens alerts check``): each send
is given at most what is left of it as its timeout, and the rows not tried by then go back to the
outbox, due at once for the next run. Each row's outcome is recorded as it happens, and only by
the sender holding its claim; a long batch renews its lease. An alert's message queued longer
than its expiry is not sent at all: it is recorded as ``expired`` with one warning (a statement
never expires: finance must get it, late or not).

A message may carry files (a month's statement): the layer that queued it gives the sender a
``Files`` provider, which renders them from what it stored, by the message's row; they are
written to a private temporary folder for Apprise, removed once sent, and attached on the
channels that take files (e-mail, json://); the others get the text, which says where the files
are. The alerts' own sender leaves such messages to that layer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from pipelines.alerts.messages import RESENT
from pipelines.api.redact import Redactor
from pipelines.config.alert_rules import Alerting, Channel
from pipelines.config.settings import ALERT_EXPIRY_HOURS, DELIVERY_DEADLINE_S, Settings
from pipelines.runtime.failpoints import failpoint
from pipelines.warehouse.alert_store import Claimed, claim, finish, release, renew
from pipelines.warehouse.writer import Warehouse

LEASE = timedelta(minutes=10)  # a claim older than this was its sender's last act
FIRST_RETRY = timedelta(seconds=30)
LAST_RETRY = timedelta(hours=1)
PAYLOAD_ID = "creditlens_event_id"  # the message's id in a json:// payload
DEFAULT_DEADLINE = timedelta(seconds=DELIVERY_DEADLINE_S)
DEFAULT_EXPIRY = timedelta(hours=ALERT_EXPIRY_HOURS)
Attachment = tuple[str, bytes]  # (file name, content)
# The files of a claimed message, rendered again from what was stored: a resend is the same bytes.
Files = Callable[[Claimed], Sequence[Attachment]]


@dataclass(frozen=True)
class Bounds:
    """How long one run may send, and how old an alert's message may be when it is sent."""

    deadline: timedelta = DEFAULT_DEADLINE
    expire_after: timedelta | None = DEFAULT_EXPIRY


def bounds(settings: Settings, *, in_sync: bool) -> Bounds:
    deadline = settings.sync_delivery_deadline_s if in_sync else settings.delivery_deadline_s
    return Bounds(
        deadline=timedelta(seconds=deadline),
        expire_after=timedelta(hours=settings.alert_expiry_hours),
    )


@dataclass
class Delivery:
    sent: list[tuple[str, str]] = field(default_factory=list)  # (event_id, channel)
    warnings: list[str] = field(default_factory=list)  # one line per channel that failed


def backoff(attempts: int) -> timedelta:
    """30 s after the first failure, doubling, at most an hour."""
    return min(FIRST_RETRY * 2 ** max(attempts - 1, 0), LAST_RETRY)


class _Heard(logging.Handler):
    """What Apprise said while it sent, kept in memory and read only for its status code or
    the kind of its failure: its text may hold a host or a path, so it goes nowhere else."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # a record that cannot be formatted says nothing
            self.lines.append(record.getMessage())

    def why(self) -> str:
        """The reason a service gave, in creditlens's words; never Apprise's own text."""
        text = "\n".join(self.lines)
        status = re.search(r"error=(\d{3})\b|\b(?:HTTP|status)[^0-9]{0,12}(\d{3})\b", text)
        if status:
            return f"the service answered HTTP {status.group(1) or status.group(2)}"
        lowered = text.lower()
        if "timed out" in lowered or "timeout" in lowered:
            return "no answer within the timeout"
        if "refused" in lowered:
            return "the connection was refused"
        if "connection" in lowered or "socket" in lowered or "resolve" in lowered:
            return "the service could not be reached"
        if "authentication" in lowered or "login" in lowered:
            return "the service refused the credentials"
        return "the service did not accept the message"


@contextmanager
def _apprise_heard() -> Iterator[_Heard]:
    """Apprise logs what it tries, hosts and paths included: nothing of it may reach a log, so
    its records go to a handler that only keeps them for ``_Heard.why``."""
    logger = logging.getLogger("apprise")
    heard = _Heard()
    saved = (logger.disabled, logger.propagate, logger.level, list(logger.handlers))
    logger.disabled, logger.propagate = False, False
    logger.setLevel(logging.DEBUG)
    logger.handlers[:] = [heard]
    try:
        yield heard
    finally:
        logger.disabled, logger.propagate, _, _ = saved
        logger.setLevel(saved[2])
        logger.handlers[:] = saved[3]


def _malformed(url: str) -> str:
    """Why Apprise knows no service at ``url``, when the URL itself says it."""
    try:
        port = urlsplit(url).port
    except ValueError:
        return "its port is not a number from 1 to 65535"
    if "://" not in url:
        return "it holds no URL (a service://... address)"
    return "" if port is None or port > 0 else "its port is not a number from 1 to 65535"


def notify_type(row: Claimed | None) -> str:
    """The kind Apprise gives the service (its colour, its icon): failure for an ERROR alert,
    warning for a WARN one, success for a recovery, info for the rest (statements, tests)."""
    if row is None or row.state is None:
        return "info"
    if row.state == "recovered":
        return "success"
    return "failure" if row.severity == "error" else "warning"


def send(
    url: str,
    title: str,
    body: str,
    event_id: str,
    attachments: Sequence[Attachment] = (),
    *,
    kind: str = "info",
    timeout_s: float | None = None,
) -> str | None:
    """None when the channel accepted the message, else why not (never the URL). The body is
    Markdown: services that render it get it as it is, e-mail gets HTML with a text part."""
    # Imported here: Apprise loads its ~100 services (0.2 s), which every process that builds
    # the Dagster definitions would otherwise pay, sending or not.
    import apprise
    from apprise.plugins.custom_json import NotifyJSON

    malformed = _malformed(url)
    if malformed:
        return f"{malformed} (value not shown)"
    with _apprise_heard() as heard:
        try:
            plugin = apprise.Apprise.instantiate(url)
        except Exception:  # a malformed URL: a line, not a traceback
            plugin = None
        if plugin is None:
            return "it holds no URL Apprise knows (value not shown)"
        if isinstance(plugin, NotifyJSON):
            plugin.payload_extras[PAYLOAD_ID] = event_id
        plugin.request_rate_per_sec = 0  # one message at a time: no throttle to wait for
        if timeout_s is not None:  # no send outlives the run's deadline
            for name in ("socket_connect_timeout", "socket_read_timeout"):
                current = getattr(plugin, name, None)
                if isinstance(current, int | float):
                    setattr(plugin, name, max(0.5, min(float(current), timeout_s)))
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
                accepted = plugin.notify(
                    body=body,
                    title=title,
                    attach=attach,
                    notify_type=apprise.NotifyType(kind),
                    body_format=apprise.NotifyFormat.MARKDOWN,
                )
            except Exception as exc:  # a channel never fails a sync
                return f"the channel failed ({type(exc).__name__})"
    return None if accepted else heard.why()


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
    bounds: Bounds | None = None,
) -> Delivery:
    """Sends every message due within ``bounds``; what a channel does not take waits for a
    later run. With ``files``, the messages that carry files (and only those), each with its
    files; those never expire."""
    env = os.environ if env is None else env
    now = now or datetime.now(UTC)
    bounds = bounds or Bounds()
    me = f"{socket.gethostname()}:{os.getpid()}"
    path, wait = warehouse.path, warehouse.lock_timeout_s
    expiry = None if files is not None else bounds.expire_after
    claimed = claim(path, wait, now, LEASE, me, files is not None, expiry)
    out = Delivery()
    if claimed.expired:
        ids = ", ".join(sorted({r.event_id for r in claimed.expired}))
        out.warnings.append(
            f"{label}: {len(claimed.expired)} message(s) not sent: queued more than "
            f"{bounds.expire_after} ago, past their expiry (CREDITLENS_ALERT_EXPIRY_HOURS), "
            f"recorded as expired in the outbox: {ids}"
        )
    started = renewed = time.monotonic()
    refused: dict[str, str] = {}  # channel -> why, for this run
    problems: dict[str, tuple[str, int, datetime]] = {}
    rows = claimed.rows
    for index, row in enumerate(rows):
        left = bounds.deadline.total_seconds() - (time.monotonic() - started)
        if left <= 0:
            rest = rows[index:]
            release(path, wait, rest, me)
            out.warnings.append(
                f"{label}: stopped at the run's deadline of {bounds.deadline.total_seconds():g} "
                f"s: {len(rest)} message(s) left in the outbox for the next run"
            )
            break
        if time.monotonic() - renewed > LEASE.total_seconds() / 2:
            renew(path, wait, rows[index:], me, datetime.now(UTC))
            renewed = time.monotonic()
        problem = refused.get(row.channel, "")
        if problem:
            problem = f"not tried: {problem}, earlier in this run"
        else:
            problem = _send_one(row, alerting, env, files, left)
            if problem:
                refused[row.channel] = problem
        failpoint("alert_sent")  # a sender killed here: sent, not recorded (docs/alerts.md)
        if not problem:
            if finish(path, wait, row, me, sent_at=datetime.now(UTC)):
                out.sent.append((row.event_id, row.channel))
            continue
        retry = now + backoff(row.attempts)
        finish(path, wait, row, me, retry_at=retry, error=problem)
        _, count, _ = problems.get(row.channel, (problem, 0, retry))
        problems[row.channel] = (refused[row.channel], count + 1, retry)
    for name, (problem, count, retry) in problems.items():
        out.warnings.append(
            f"{label}: channel {name}: {count} message{'s' if count > 1 else ''} not delivered "
            f"({problem}); kept in the outbox, retried after {retry:%Y-%m-%d %H:%M:%S} UTC"
        )
    return out


def _send_one(
    row: Claimed,
    alerting: Alerting,
    env: Mapping[str, str],
    files: Files | None,
    timeout_s: float,
) -> str:
    """Why ``row`` was not delivered, naming the channel's variable; empty when it was."""
    channel = alerting.channels.get(row.channel)
    url, problem = _url(channel, row.channel, env)
    if url is None or channel is None:
        return problem
    body = f"{row.body}\n\n{RESENT}" if row.resend else row.body
    attachments, problem = _files(files, row)
    if not problem:
        problem = send(
            url, row.title, body, row.event_id, attachments,
            kind=notify_type(row), timeout_s=timeout_s,
        ) or ""  # fmt: skip
        if problem:
            problem = f"{channel.url_env}: {problem}"
    return Redactor([url]).scrub(problem)


def try_channel(alerting: Alerting, name: str, env: Mapping[str, str] | None = None) -> str | None:
    """Sends a test message to ``name``: None when accepted, else why not (its variable named)."""
    env = os.environ if env is None else env
    channel = alerting.channels.get(name)
    url, problem = _url(channel, name, env)
    if url is None or channel is None:
        return problem
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    event_id = f"test-{stamp}"
    body = f"A test message from creditlens to channel {name}.\n\n[creditlens alert {event_id}]"
    problem = send(url, f"creditlens test: channel {name}", body, event_id)
    return None if problem is None else Redactor([url]).scrub(f"{channel.url_env}: {problem}")
