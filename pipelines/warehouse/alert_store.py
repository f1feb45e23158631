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
            for r, acct, alert, state, seq, acked, value in self._con.execute(
                "SELECT rule, account, alert_id, "
                "arg_max(state, seq) FILTER (WHERE state <> 'acknowledged'), max(seq), "
                "coalesce(max(seq) FILTER (WHERE state = 'acknowledged') "
                "> max(seq) FILTER (WHERE state <> 'acknowledged'), false), "
                "arg_max(dimension_value, seq) FROM alert_events GROUP BY rule, account, alert_id"
            ).fetchall():
                latest = Latest(state, int(seq), bool(acked), value)
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


def acknowledge(
    path: Path, lock_timeout_s: float, alert_id: str, row: Mapping[str, Any]
) -> tuple[str, str, str | None, int] | None:
    """Appends an acknowledgement of ``alert_id`` (``row`` holds its own columns); None when no
    such alert. Returns the alert's rule, account, dimension value and new seq."""
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        found = con.execute(
            "SELECT arg_max(rule, seq), arg_max(kind, seq), arg_max(account, seq), "
            "arg_max(dimension_value, seq), max(seq) FROM alert_events WHERE alert_id = ?",
            [alert_id],
        ).fetchall()[0]
        if found[4] is None:
            return None
        rule, kind, account, value, seq = found
        insert_dicts(
            con,
            "alert_events",
            [
                {
                    **row,
                    "event_id": f"{alert_id}/{seq + 1}",
                    "alert_id": alert_id,
                    "seq": seq + 1,
                    "rule": rule,
                    "kind": kind,
                    "account": account,
                    "dimension_value": value,
                }
            ],
        )
        # An acknowledged alert's messages not yet sent are not sent.
        con.execute(
            "UPDATE alert_outbox SET status = 'sent', last_error = 'acknowledged before sent' "
            "WHERE alert_id = ? AND status = 'pending'",
            [alert_id],
        )
        return rule, account, value, seq + 1


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


# Messages queued with files to attach (month close's statements, pipelines/statements/): their
# event ids start with one of these, and only a sender that has their files claims them.
WITH_FILES = ("statement/", "statements/")
_WITH_FILES_SQL = " OR ".join(f"starts_with(event_id, '{p}')" for p in WITH_FILES)


def claim(
    path: Path,
    lock_timeout_s: float,
    now: datetime,
    lease: timedelta,
    claimed_by: str,
    with_files: bool = False,
) -> list[Claimed]:
    """Claims every row due (pending and past its backoff, or claimed by a sender whose lease
    ran out), in a write transaction, before anything is sent: the messages with files
    (``WITH_FILES``) when ``with_files``, else the others."""
    if not path.exists():
        return []
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        due = con.execute(
            "SELECT event_id, channel, title, body, attempts, status = 'sending', alert_id "
            "FROM alert_outbox WHERE ((status = 'pending' AND "
            "coalesce(next_attempt_at, enqueued_at) <= ?) OR (status = 'sending' AND "
            f"claimed_at <= ?)) AND ({_WITH_FILES_SQL}) = ? "
            "ORDER BY enqueued_at, event_id, channel",
            [now, now - lease, with_files],
        ).fetchall()
        _each(
            con,
            "UPDATE alert_outbox SET status = 'sending', claimed_at = ?, claimed_by = ?, "
            "attempts = attempts + 1 WHERE event_id = ? AND channel = ?",
            [[now, claimed_by, e, c] for e, c, *_ in due],
        )
    return [Claimed(e, c, t, b, int(n) + 1, bool(s), a) for e, c, t, b, n, s, a in due]


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
    """Queues outbox rows (all columns but the sending ones) unless their event and channel
    are already there, so a rerun queues nothing twice; ``again``: one already sent is made
    pending again instead (a resend by hand, same id). Returns the (event_id, channel) queued."""
    if not rows:
        return []
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        ids = sorted({r["event_id"] for r in rows})
        there = {
            (e, c): s
            for e, c, s in con.execute(
                "SELECT event_id, channel, status FROM alert_outbox "
                "WHERE list_contains(?, event_id)",
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
    sent: Sequence[tuple[str, str, datetime]],
    failed: Sequence[tuple[str, str, datetime, str]],
) -> None:
    """Records what came of claimed rows: (event_id, channel, sent_at) and (event_id, channel,
    next_attempt_at, error)."""
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        _each(
            con,
            "UPDATE alert_outbox SET status = 'sent', sent_at = ?, last_error = NULL "
            "WHERE event_id = ? AND channel = ?",
            [[at, e, c] for e, c, at in sent],
        )
        _each(
            con,
            "UPDATE alert_outbox SET status = 'pending', next_attempt_at = ?, last_error = ? "
            "WHERE event_id = ? AND channel = ?",
            [[at, error, e, c] for e, c, at, error in failed],
        )
