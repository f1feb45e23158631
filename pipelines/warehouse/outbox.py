"""The outbox's reads and writes: messages queued in their writer's transaction, claimed before
they are sent, recorded after (docs/alerts.md, "Delivery").

A message is queued in the transaction that records what it is about (an alert's change, a
month's close), so neither is ever kept without the other. A sender claims its rows in a write
transaction of their own before sending, and records what came of each in another: a row
claimed by a sender that died stays claimed until its lease runs out, then is sent again, its id
unchanged. The table, ``message_outbox``, is declared in outbox_tables.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from pipelines.warehouse.connection import open_for_write, transaction
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.rows import insert_dicts


def _each(con: duckdb.DuckDBPyConnection, sql: str, params: list[list[Any]]) -> None:
    if params:
        con.executemany(sql, params)


@dataclass(frozen=True)
class Claimed:
    event_id: str
    channel: str
    title: str
    body: str
    attempts: int  # including this one
    resend: bool  # an earlier sender claimed it and never said what came of it
    subject_id: str = ""
    state: str | None = None  # the alert change's state (firing, recovered); None: a statement
    severity: str | None = None  # error or warn, for an alert


# Messages queued with files to attach (month close's statements, pipelines/statements/): their
# event ids start with one of these, and only a sender that has their files claims them.
WITH_FILES = ("statement/", "statements/")
_WITH_FILES_SQL = " OR ".join(f"starts_with(o.event_id, '{p}')" for p in WITH_FILES)


@dataclass
class Claim:
    """A sender's claim: the rows it may send, and those it found too old to send."""

    rows: list[Claimed]
    expired: list[Claimed]


def claim(
    path: Path,
    lock_timeout_s: float,
    now: datetime,
    lease: timedelta,
    claimed_by: str,
    with_files: bool = False,
    expire_after: timedelta | None = None,
) -> Claim:
    """Claims every row due (pending and past its backoff, or claimed by a sender whose lease
    ran out), in a write transaction, before anything is sent: the messages with files
    (``WITH_FILES``) when ``with_files``, else the others. A row queued longer than
    ``expire_after`` ago is not sent: it is recorded as ``expired`` instead. An alert's message
    is claimed with its change's state and severity, which the service is told."""
    if not warehouse_exists(path):
        return Claim([], [])
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        due = con.execute(
            "SELECT o.event_id, o.channel, o.title, o.body, o.attempts, o.status = 'sending', "
            f"o.subject_id, e.state, e.severity, o.enqueued_at FROM message_outbox o "
            "LEFT JOIN alert_events e ON e.event_id = o.event_id "
            "WHERE ((o.status = 'pending' AND coalesce(o.next_attempt_at, o.enqueued_at) <= ?) "
            "OR (o.status = 'sending' AND o.claimed_at <= ?)) "
            f"AND ({_WITH_FILES_SQL}) = ? ORDER BY o.enqueued_at, o.event_id, o.channel",
            [now, now - lease, with_files],
        ).fetchall()
        rows = [
            (Claimed(e, c, t, b, int(n) + 1, bool(r), s, st, sv), q)
            for e, c, t, b, n, r, s, st, sv, q in due
        ]
        fresh: list[Claimed] = []
        old: list[Claimed] = []
        for row, queued_at in rows:
            too_old = expire_after is not None and queued_at < now - expire_after
            (old if too_old else fresh).append(row)
        _each(
            con,
            "UPDATE message_outbox SET status = 'sending', claimed_at = ?, claimed_by = ?, "
            "attempts = attempts + 1 WHERE event_id = ? AND channel = ?",
            [[now, claimed_by, c.event_id, c.channel] for c in fresh],
        )
        _each(
            con,
            "UPDATE message_outbox SET status = 'expired', last_error = ? "
            "WHERE event_id = ? AND channel = ?",
            [[f"not sent: queued more than {_hours(expire_after)} before a channel took it",
              c.event_id, c.channel] for c in old],
        )  # fmt: skip
    return Claim(fresh, old)


def _hours(span: timedelta | None) -> str:
    hours = (span or timedelta()).total_seconds() / 3600
    return f"{hours:g} hours"


def renew(
    path: Path, lock_timeout_s: float, rows: Sequence[Claimed], claimed_by: str, now: datetime
) -> None:
    """Renews the lease of rows still claimed by ``claimed_by``: a long batch keeps them."""
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        _each(
            con,
            "UPDATE message_outbox SET claimed_at = ? WHERE event_id = ? AND channel = ? "
            "AND status = 'sending' AND claimed_by = ?",
            [[now, r.event_id, r.channel, claimed_by] for r in rows],
        )


def release(path: Path, lock_timeout_s: float, rows: Sequence[Claimed], claimed_by: str) -> None:
    """Gives back rows claimed and not tried (the run's deadline came first): pending again,
    their attempt not counted, due at once for the next sender."""
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        _each(
            con,
            "UPDATE message_outbox SET status = 'pending', attempts = attempts - 1, "
            "claimed_at = NULL, claimed_by = NULL WHERE event_id = ? AND channel = ? "
            "AND status = 'sending' AND claimed_by = ?",
            [[r.event_id, r.channel, claimed_by] for r in rows],
        )


def outbox_row(
    event_id: str, subject_id: str, channel: str, title: str, body: str, now: datetime
) -> dict[str, Any]:
    """A message waiting in the outbox (the sending columns filled in as it is sent): one shape
    for an alert's change and a closed statement alike; ``subject_id`` says what it is about."""
    return {
        "event_id": event_id,
        "subject_id": subject_id,
        "channel": channel,
        "status": "pending",
        "title": title,
        "body": body,
        "attempts": 0,
        "enqueued_at": now,
    }


def add_new(con: duckdb.DuckDBPyConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Adds rows whose event ids are new (an evaluation's changes, each numbered past the
    alert's last), in the caller's transaction."""
    insert_dicts(con, "message_outbox", rows)


def enqueue(
    path: Path, lock_timeout_s: float, rows: Sequence[dict[str, Any]], again: bool = False
) -> list[tuple[str, str]]:
    """``queue_rows`` in a write transaction of its own."""
    if not rows:
        return []
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        return queue_rows(con, rows, again)


def queue_rows(
    con: duckdb.DuckDBPyConnection, rows: Sequence[dict[str, Any]], again: bool = False
) -> list[tuple[str, str]]:
    """Queues outbox rows (all columns but the sending ones) unless their event and channel
    are already there, so a rerun queues nothing twice; ``again``: one already sent is made
    pending again instead (a resend by hand, same id). Returns the (event_id, channel) queued.
    Runs in the caller's transaction: a month close queues its messages in the one that
    records it."""
    if not rows:
        return []
    ids = sorted({r["event_id"] for r in rows})
    there = {
        (e, c): s
        for e, c, s in con.execute(
            "SELECT event_id, channel, status FROM message_outbox WHERE list_contains(?, event_id)",
            [ids],
        ).fetchall()
    }
    new = [r for r in rows if (r["event_id"], r["channel"]) not in there]
    insert_dicts(con, "message_outbox", new)
    queued = [(r["event_id"], r["channel"]) for r in new]
    if again:
        sent = [(e, c) for (e, c), s in there.items() if s == "sent"]
        _each(
            con,
            "UPDATE message_outbox SET status = 'pending', next_attempt_at = NULL, "
            "last_error = NULL WHERE event_id = ? AND channel = ?",
            [[e, c] for e, c in sent],
        )
        queued += sent
    return queued


def drop_pending(con: duckdb.DuckDBPyConnection, subject_id: str, why: str) -> None:
    """Marks the messages about ``subject_id`` not yet sent as done without sending them,
    ``why`` as their last error (an alert acknowledged before its messages went), in the
    caller's transaction."""
    con.execute(
        "UPDATE message_outbox SET status = 'sent', last_error = ? "
        "WHERE subject_id = ? AND status = 'pending'",
        [why, subject_id],
    )


def finish(
    path: Path,
    lock_timeout_s: float,
    row: Claimed,
    claimed_by: str,
    *,
    sent_at: datetime | None = None,
    retry_at: datetime | None = None,
    error: str = "",
) -> bool:
    """Records what came of one claimed row, as it happens: sent (``sent_at``), or back to
    pending until ``retry_at`` with ``error``. Only the sender holding the claim records it: a
    sender whose lease ran out and whose row another sender took records nothing (False)."""
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        mine = "event_id = ? AND channel = ? AND status = 'sending' AND claimed_by = ?"
        key = [row.event_id, row.channel, claimed_by]
        held = con.execute(f"SELECT count(*) FROM message_outbox WHERE {mine}", key).fetchone()
        if not held or not held[0]:
            return False
        if sent_at is not None:
            con.execute(
                f"UPDATE message_outbox SET status = 'sent', sent_at = ?, last_error = NULL "
                f"WHERE {mine}",
                [sent_at, *key],
            )
        else:
            con.execute(
                f"UPDATE message_outbox SET status = 'pending', next_attempt_at = ?, "
                f"last_error = ? WHERE {mine}",
                [retry_at, error, *key],
            )
        return True
