"""The alerts' reads and writes: one write transaction per evaluation, acknowledgements.

An evaluation reads the previous states and appends the changes in ONE transaction under the
writer's lock, so two evaluations at once (the CLI's and a Dagster run's) cannot both see "ok"
and both record the same crossing; the changes' messages are queued in the same transaction,
in the outbox (outbox.py), which sends them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.warehouse.connection import frame, open_for_write, transaction
from pipelines.warehouse.outbox import add_new, drop_pending
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
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_catalog = current_database()"
            ).fetchall()
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
        add_new(self._con, outbox)
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
        drop_pending(con, alert_id, "acknowledged before sent")
        return Acknowledged(rule, kind, account, value, state, "closed" if closes else "silenced")
