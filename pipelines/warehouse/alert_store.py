"""The alerts' reads and writes: one write transaction per evaluation, claims before sends.

An evaluation reads the previous states and appends the changes in ONE transaction under the
writer's lock, so two evaluations at once (the CLI's and a Dagster run's) cannot both see "ok"
and both record the same crossing. A sender claims its outbox rows in a write transaction of
their own before sending, and records what came of them in another: a row claimed by a sender
that died stays claimed until its lease runs out, then is sent again, its id unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.warehouse.connection import frame, open_for_write, transaction
from pipelines.warehouse.rows import insert_dicts

NEVER = date.min  # alert_rule_runs has no row: the rule's first evaluation


@dataclass(frozen=True)
class Latest:
    """An alert's latest change (acknowledgements aside) and its numbering."""

    state: str
    seq: int  # the highest seq of the alert, acknowledgements included
    acknowledged: bool
    value: str | None = None  # its dimension value
    fired_at: datetime | None = None  # when its latest change (acknowledgements aside) was made


class AlertStore:
    """What one evaluation may ask and append, inside its transaction."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self._frames: dict[tuple[str, tuple[Any, ...]], pl.DataFrame] = {}
        self._latest: dict[tuple[str, str], dict[str, Latest]] | None = None
        self._runs: dict[tuple[str, str], date | None] | None = None
        self.tables = {
            r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }

    def frame(self, sql: str, params: Sequence[Any] = ()) -> pl.DataFrame:
        """A query's answer, kept for the evaluation: nothing it reads changes until it records
        its changes, at the end, so every account's rule asks each question once."""
        key = (sql, tuple(params))
        if key not in self._frames:
            self._frames[key] = frame(self._con, sql, list(params))
        return self._frames[key]

    def latest(self, rule: str, account: str) -> dict[str, Latest]:
        """Each alert of ``rule`` for ``account`` by alert_id (every alert read at once)."""
        if self._latest is None:
            self._latest = {}
            for r, acct, alert, state, seq, acked, value, at in self._con.execute(
                "SELECT rule, account, alert_id, "
                "arg_max(state, seq) FILTER (WHERE state <> 'acknowledged'), max(seq), "
                "coalesce(max(seq) FILTER (WHERE state = 'acknowledged') "
                "> max(seq) FILTER (WHERE state <> 'acknowledged'), false), "
                "arg_max(dimension_value, seq), "
                "arg_max(occurred_at, seq) FILTER (WHERE state <> 'acknowledged') "
                "FROM alert_events GROUP BY rule, account, alert_id"
            ).fetchall():
                latest = Latest(state, int(seq), bool(acked), value, at)
                self._latest.setdefault((r, acct), {})[alert] = latest
        return self._latest.get((rule, account), {})

    def last_evaluated(self, rule: str, account: str) -> date | None:
        """The last whole day a previous evaluation covered (None: none recorded); NEVER
        without a previous evaluation."""
        if self._runs is None:
            self._runs = {
                (r, a): d
                for r, a, d in self._con.execute(
                    "SELECT rule, account, max(data_day) FROM alert_rule_runs GROUP BY ALL"
                ).fetchall()
            }
        return self._runs.get((rule, account), NEVER)

    def record(
        self,
        events: Sequence[dict[str, Any]],
        outbox: Sequence[dict[str, Any]],
        runs: Sequence[dict[str, Any]],
    ) -> None:
        insert_dicts(self._con, "alert_events", events)
        insert_dicts(self._con, "alert_outbox", outbox)
        insert_dicts(self._con, "alert_rule_runs", runs)


@contextmanager
def evaluating(path: Path, lock_timeout_s: float) -> Iterator[AlertStore]:
    """An evaluation's reads and writes, all or nothing."""
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        yield AlertStore(con)


@dataclass(frozen=True)
class Acknowledged:
    """What ``acknowledge`` found: the alert, and what it did or why it refused."""

    rule: str
    kind: str
    account: str
    value: str | None
    state: str  # the alert's state before: only a firing one is acknowledged
    done: str  # "silenced" (a state alert, until it recovers), "closed" (an event), or ""


def acknowledge(
    path: Path,
    lock_timeout_s: float,
    alert_id: str,
    row: Mapping[str, Any],
    events: frozenset[str],
) -> Acknowledged | None:
    """Acknowledges a firing, not yet acknowledged alert (``row`` holds the acknowledgement's
    own columns); None when no such alert. An acknowledgement belongs to the crossing it was
    made in: one of an alert that is not firing is refused (``done`` empty), and a later
    crossing is a new one. An event kind (``events``) is closed by it; a state kind is silent
    until it recovers. Its messages not yet sent are dropped."""
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        found = con.execute(
            "SELECT arg_max(rule, seq), arg_max(kind, seq), arg_max(account, seq), "
            "arg_max(dimension_value, seq), max(seq), "
            "arg_max(state, seq) FILTER (WHERE state <> 'acknowledged'), "
            "coalesce(max(seq) FILTER (WHERE state = 'acknowledged') "
            "> max(seq) FILTER (WHERE state <> 'acknowledged'), false) "
            "FROM alert_events WHERE alert_id = ?",
            [alert_id],
        ).fetchall()[0]
        if found[4] is None:
            return None
        rule, kind, account, value, seq, state, acked = found
        if state != "firing" or acked:
            return Acknowledged(rule, kind, account, value, "acknowledged" if acked else state, "")
        closes = kind in events
        own = {"alert_id": alert_id, "rule": rule, "kind": kind, "account": account,
               "dimension_value": value}  # fmt: skip
        added = [{**row, **own, "event_id": f"{alert_id}/{seq + 1}", "seq": seq + 1}]
        if closes:
            added.append({
                **row, **own, "event_id": f"{alert_id}/{seq + 2}", "seq": seq + 2,
                "state": "closed", "evidence": f"closed by {row['acted_by']}: {row['reason']}",
            })  # fmt: skip
        insert_dicts(con, "alert_events", added)
        con.execute(
            "UPDATE alert_outbox SET status = 'sent', last_error = 'acknowledged before sent' "
            "WHERE alert_id = ? AND status = 'pending'",
            [alert_id],
        )
        return Acknowledged(rule, kind, account, value, state, "closed" if closes else "silenced")


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
    alert_id: str = ""
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
    ``expire_after`` ago is not sent: it is recorded as ``expired`` instead."""
    if not path.exists():
        return Claim([], [])
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        due = con.execute(
            "SELECT o.event_id, o.channel, o.title, o.body, o.attempts, o.status = 'sending', "
            "o.alert_id, e.state, e.severity, o.enqueued_at FROM alert_outbox o "
            "LEFT JOIN alert_events e ON e.event_id = o.event_id "
            "WHERE ((o.status = 'pending' AND coalesce(o.next_attempt_at, o.enqueued_at) <= ?) "
            "OR (o.status = 'sending' AND o.claimed_at <= ?)) "
            f"AND ({_WITH_FILES_SQL}) = ? ORDER BY o.enqueued_at, o.event_id, o.channel",
            [now, now - lease, with_files],
        ).fetchall()
        rows = [
            (Claimed(e, c, t, b, int(n) + 1, bool(r), a, st, sv), q)
            for e, c, t, b, n, r, a, st, sv, q in due
        ]
        fresh: list[Claimed] = []
        old: list[Claimed] = []
        for row, queued_at in rows:
            too_old = expire_after is not None and queued_at < now - expire_after
            (old if too_old else fresh).append(row)
        _each(
            con,
            "UPDATE alert_outbox SET status = 'sending', claimed_at = ?, claimed_by = ?, "
            "attempts = attempts + 1 WHERE event_id = ? AND channel = ?",
            [[now, claimed_by, c.event_id, c.channel] for c in fresh],
        )
        _each(
            con,
            "UPDATE alert_outbox SET status = 'expired', last_error = ? "
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
            "UPDATE alert_outbox SET claimed_at = ? WHERE event_id = ? AND channel = ? "
            "AND status = 'sending' AND claimed_by = ?",
            [[now, r.event_id, r.channel, claimed_by] for r in rows],
        )


def release(path: Path, lock_timeout_s: float, rows: Sequence[Claimed], claimed_by: str) -> None:
    """Gives back rows claimed and not tried (the run's deadline came first): pending again,
    their attempt not counted, due at once for the next sender."""
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        _each(
            con,
            "UPDATE alert_outbox SET status = 'pending', attempts = attempts - 1, "
            "claimed_at = NULL, claimed_by = NULL WHERE event_id = ? AND channel = ? "
            "AND status = 'sending' AND claimed_by = ?",
            [[r.event_id, r.channel, claimed_by] for r in rows],
        )


def outbox_row(
    event_id: str, alert_id: str, channel: str, title: str, body: str, now: datetime
) -> dict[str, Any]:
    """A message waiting in ``alert_outbox`` (the sending columns filled in as it is sent): one
    shape for an alert's change and a closed statement alike."""
    return {
        "event_id": event_id,
        "alert_id": alert_id,
        "channel": channel,
        "status": "pending",
        "title": title,
        "body": body,
        "attempts": 0,
        "enqueued_at": now,
    }


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
            "SELECT event_id, channel, status FROM alert_outbox WHERE list_contains(?, event_id)",
            [ids],
        ).fetchall()
    }
    new = [r for r in rows if (r["event_id"], r["channel"]) not in there]
    insert_dicts(con, "alert_outbox", new)
    queued = [(r["event_id"], r["channel"]) for r in new]
    if again:
        sent = [(e, c) for (e, c), s in there.items() if s == "sent"]
        _each(
            con,
            "UPDATE alert_outbox SET status = 'pending', next_attempt_at = NULL, "
            "last_error = NULL WHERE event_id = ? AND channel = ?",
            [[e, c] for e, c in sent],
        )
        queued += sent
    return queued


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
        held = con.execute(f"SELECT count(*) FROM alert_outbox WHERE {mine}", key).fetchone()
        if not held or not held[0]:
            return False
        if sent_at is not None:
            con.execute(
                f"UPDATE alert_outbox SET status = 'sent', sent_at = ?, last_error = NULL "
                f"WHERE {mine}",
                [sent_at, *key],
            )
        else:
            con.execute(
                f"UPDATE alert_outbox SET status = 'pending', next_attempt_at = ?, "
                f"last_error = ? WHERE {mine}",
                [retry_at, error, *key],
            )
        return True
