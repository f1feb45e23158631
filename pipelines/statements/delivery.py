"""Each close and restatement sent once, with its files, through the channels and the outbox.

Queued, not sent, in the transaction that records the close (pipelines/statements/close.py): a
message is an outbox row per channel whose event id names the account, month and version
(``statement/acme/2026-10/v1``), so a rerun, a second close check or a Dagster retry queues
nothing twice, and a close is never recorded without its messages. Sent by the outbox's sender
(pipelines/notify/delivery.py), which this layer gives the files: rendered again from the stored
close at the moment of sending, byte for byte what the first attempt carried (the documents are
pure).

Where messages go: each account's ``statement_channels``; the ``[statements]`` table's
``channels`` too, one message per company, or, with ``digest = true``, one digest for all with
the consolidated statement (docs/statements.md). A check that closes several months of one
account at once (its first close, a backlog) delivers only the latest of them; the others are
listed and sent by hand (``resend``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pipelines.config.alerting import alerting, statement_delivery
from pipelines.config.settings import Settings
from pipelines.notify.apprise_sender import Attachment
from pipelines.notify.delivery import Delivery, deliver
from pipelines.statements import documents as docs
from pipelines.statements.close import (
    ClosedStatement,
    CloseResult,
    Loaded,
    Loader,
    Restatement,
    check_closes,
    stored_loader,
)
from pipelines.warehouse.outbox import Claimed, outbox_row
from pipelines.warehouse.writer import Warehouse

CLOSE_PREFIX = "statement/"
DIGEST_SUBJECT = "statements/digest:"  # a digest's subject_id: this, then what it covers, as JSON


def _latest_only(
    issued: Sequence[ClosedStatement], first_close_accounts: set[str]
) -> list[ClosedStatement]:
    """An account's first close delivers its latest closed month only."""
    latest: dict[str, date] = {}
    for s in issued:
        if s.account in first_close_accounts:
            latest[s.account] = max(latest.get(s.account, s.month), s.month)
    return [s for s in issued if s.account not in latest or s.month == latest[s.account]]


def _members(statements: Sequence[ClosedStatement], restatements: Sequence[Restatement]) -> str:
    """What a digest covers, as its subject_id: enough to render its files again."""
    covered = {
        "closed": [[s.account, f"{s.month:%Y-%m}", s.version] for s in statements],
        "restated": [
            [r.current.account, f"{r.current.month:%Y-%m}", r.current.version] for r in restatements
        ],
    }
    return DIGEST_SUBJECT + json.dumps(covered, ensure_ascii=False, sort_keys=True)


def message_rows(
    settings: Settings,
    issued: Sequence[ClosedStatement],
    restated: Sequence[Restatement],
    first_close_accounts: set[str],
    resend: bool = False,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """The outbox rows of these closes and restatements, for the close check to queue in its
    own transaction. ``resend``: every month given, several at once or not."""
    now = now or datetime.now(UTC)
    chosen = statement_delivery(settings, env, cwd)
    channels = {a.name: a.statement_channels for a in settings.accounts}
    closes = list(issued) if resend else _latest_only(issued, first_close_accounts)
    per_company = [(s, None) for s in closes] + [(r.current, r) for r in restated]
    rows: list[dict[str, Any]] = []
    for s, restatement in per_company:
        title, body = docs.message(s, restatement)
        to = dict.fromkeys(
            [*channels.get(s.account, ()), *(() if chosen.digest else chosen.channels)]
        )
        subject_id = f"statement/{s.account}/{s.month:%Y-%m}"
        rows += [outbox_row(docs.event_id(s), subject_id, c, title, body, now) for c in to]
    if chosen.digest and (closes or restated):
        title, body = docs.digest_message(closes, restated)
        digest = docs.digest_id(closes, restated)
        members = _members(closes, restated)
        rows += [outbox_row(digest, members, c, title, body, now) for c in chosen.channels]
    return rows


def queued_lines(queued: Sequence[tuple[str, str]]) -> list[str]:
    return [f"statement message queued: {event} for channel {channel}" for event, channel in queued]


def _load(load: Loader, account: str, month: str, version: int) -> Loaded:
    found = load(account, date.fromisoformat(f"{month}-01"), version)
    if found is None:
        raise LookupError(f"no stored close of {account} {month} version {version}")
    return found


def files(row: Claimed, load: Loader) -> list[Attachment]:
    """A queued message's files, rendered from the stored closes it names."""
    if row.event_id.startswith(CLOSE_PREFIX):
        account, month, version = row.event_id[len(CLOSE_PREFIX) :].rsplit("/", 2)
        s, restatement = _load(load, account, month, int(version.lstrip("v")))
        return [
            (docs.filename(s, "csv"), docs.statement_csv(s)),
            (docs.filename(s, "pdf"), docs.statement_pdf(s, restatement)),
        ]
    if not row.subject_id.startswith(DIGEST_SUBJECT):
        raise LookupError("not a statement's message")
    covered = json.loads(row.subject_id[len(DIGEST_SUBJECT) :])
    closed = [_load(load, a, m, v)[0] for a, m, v in covered["closed"]]
    restated = [_load(load, a, m, v) for a, m, v in covered["restated"]]
    consolidated = docs.consolidated_of(closed, [s for s, _ in restated])
    out = [
        (docs.consolidated_filename(consolidated, "csv"), docs.consolidated_csv(consolidated)),
        (docs.consolidated_filename(consolidated, "pdf"), docs.consolidated_pdf(consolidated)),
    ]
    for s, restatement in [(s, None) for s in closed] + restated:
        out += [
            (docs.filename(s, "csv"), docs.statement_csv(s)),
            (docs.filename(s, "pdf"), docs.statement_pdf(s, restatement)),
        ]
    return out


def send_pending(
    warehouse: Warehouse,
    settings: Settings,
    load: Loader | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    now: datetime | None = None,
) -> Delivery:
    """Sends every statement message due, each with its files; what a channel does not take
    waits in the outbox for a later run (one warning line per channel)."""
    chosen = stored_loader(warehouse) if load is None else load
    made: dict[tuple[str, str], list[Attachment]] = {}  # one rendering for all its channels

    def render(row: Claimed) -> list[Attachment]:
        key = (row.event_id, row.subject_id)
        if key not in made:
            made[key] = files(row, chosen)
        return made[key]

    return deliver(
        warehouse, alerting(settings, env, cwd), env, now, files=render, label="statements"
    )


# One close check and what it sends, the same for `creditlens sync`, `creditlens close`, the
# Dagster job after each reconciliation and the daily schedule. A close and its messages are
# recorded in one transaction (the messages as outbox rows); sending follows through the outbox,
# so a channel that is down loses nothing and never undoes a close: its messages wait and the next
# check sends them. A crash between the two leaves neither, and the next check closes and queues
# again.


@dataclass
class CheckOutcome:
    result: CloseResult
    queued: list[str] = field(default_factory=list)  # one line per message queued
    warnings: list[str] = field(default_factory=list)


def close_and_deliver(
    warehouse: Warehouse, settings: Settings, month: date | None = None, resend: bool = False
) -> CheckOutcome:
    """Closes and restates (``month`` only when given) and queues their messages, in one
    transaction, then sends. ``resend``: a month asked for by hand that is closed already is
    queued again (its latest version), and every month asked for is sent, one or several."""

    def messages(result: CloseResult) -> list[dict[str, Any]]:
        issued = [*result.issued, *(result.already_closed if resend else [])]
        first = set() if resend else result.first_close_accounts
        rows = message_rows(settings, issued, result.restated, first, resend)
        if result.unsent:  # closed by an earlier version, never queued: queued once, now
            rows += message_rows(settings, result.unsent, [], set())
        return rows

    result = check_closes(warehouse, settings, month, messages=messages, again=resend)
    outcome = CheckOutcome(result, queued_lines(result.queued))
    if result.changed or result.queued:
        warehouse.publish_analyst_copy()
    try:
        outcome.warnings += send_pending(warehouse, settings).warnings
    except Exception as exc:  # a channel must never fail the check: the outbox keeps them
        outcome.warnings.append(f"statements: not sent: {type(exc).__name__}: {exc}")
    return outcome
