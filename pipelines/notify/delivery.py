"""Sending the outbox: claimed first, sent through Apprise, recorded after; never a failed sync.

A channel that does not take a message keeps it in the outbox, retried on later runs after a
backoff, and is one warning line per channel naming its variable and why (never its value: every
line is scrubbed of the URL's spellings with the keys' scrubber); a channel that refused once is
not tried again in the same run.

Every run has a deadline (short inside a sync, longer for ``creditlens alerts check``): each send
is given at most what is left of it as its timeout, and the rows not tried by then go back to the
outbox, due at once for the next run. Each row's outcome is recorded as it happens, and only by
the sender holding its claim; a long batch renews its lease. An alert's message queued longer
than its expiry is not sent at all: it is recorded as ``expired`` with one warning (a statement
never expires: finance must get it, late or not).

A message may carry files (a month's statement): the layer that queued it gives the loop a
``Files`` provider, which renders them from what it stored, by the message's row; the sender
attaches them on the channels that take files, and the others get the text, which says where the
files are. A loop given no ``Files`` leaves such messages to the layer that has them.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pipelines.api.redact import Redactor
from pipelines.config.alert_rules import Alerting
from pipelines.config.settings import ALERT_EXPIRY_HOURS, DELIVERY_DEADLINE_S, Settings
from pipelines.notify.apprise_sender import Attachment, send
from pipelines.notify.channels import channel_url
from pipelines.notify.message import as_sent, notify_type
from pipelines.runtime.failpoints import failpoint
from pipelines.warehouse.outbox import Claimed, claim, finish, release, renew
from pipelines.warehouse.writer import Warehouse

LEASE = timedelta(minutes=10)  # a claim older than this was its sender's last act
FIRST_RETRY = timedelta(seconds=30)
LAST_RETRY = timedelta(hours=1)
DEFAULT_DEADLINE = timedelta(seconds=DELIVERY_DEADLINE_S)
DEFAULT_EXPIRY = timedelta(hours=ALERT_EXPIRY_HOURS)
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
    """Sends every message due within ``bounds`` through ``alerting``'s channels; what a channel
    does not take waits for a later run. With ``files``, the messages that carry files (and
    only those), each with its files; those never expire. ``label`` begins each warning."""
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
    url, problem = channel_url(channel, row.channel, env)
    if url is None or channel is None:
        return problem
    attachments, problem = _files(files, row)
    if not problem:
        problem = send(
            url, row.title, as_sent(row.body, row.resend), row.event_id, attachments,
            kind=notify_type(row.state, row.severity), timeout_s=timeout_s,
        ) or ""  # fmt: skip
        if problem:
            problem = f"{channel.url_env}: {problem}"
    return Redactor([url]).scrub(problem)
