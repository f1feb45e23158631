"""The month close's reads and writes: one write transaction per close check.

A close check reads what the accounts' syncs covered, their months as the reconciliation left
them and the versions already closed, and appends the new versions, all in ONE transaction under
the writer's lock: a kill leaves no close or a whole one, and two checks at once (the CLI's and a
Dagster run's) cannot both close the same month. Nothing here is ever updated or deleted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipelines.runtime.failpoints import failpoint
from pipelines.warehouse.connection import open_for_write, transaction
from pipelines.warehouse.lake import current_lake
from pipelines.warehouse.outbox import queue_rows
from pipelines.warehouse.rows import insert_dicts
from pipelines.warehouse.sql_text import quote
from transforms.aggregate import STATEMENT_MONEY_COLUMNS

_IN = "account IN (SELECT unnest(?::VARCHAR[]))"
MONEY_TYPE = "DECIMAL(18,6)"
# The accounts a check reads, each from its first month (``months_from``; the first day ever
# when every month is read), as rows `f` a query joins.
_FROM = "(SELECT unnest(?::VARCHAR[]) AS account, unnest(?::DATE[]) AS from_month) AS f"
_EVER = date(1, 1, 1)


def _from_params(accounts: Sequence[str], since: dict[str, date | None] | None) -> list[Any]:
    names = list(accounts)
    since = since or {}
    return [names, [since.get(a) or _EVER for a in names]]


@dataclass(frozen=True)
class Coverage:
    """What an account's data covers: its syncs' last day, and when the latest of them
    committed (the close's ``data_as_of``)."""

    covered: date
    data_as_of: datetime


@dataclass(frozen=True)
class StoredVersion:
    """A closed version as stored: its row, lines and totals."""

    row: dict[str, Any]
    lines: list[tuple[int, str, str | None, Decimal, int]]  # line_no, line, entry_type, ...
    totals: list[tuple[str, str | None, Decimal, int]]


class StatementStore:
    """What one close check may ask and append, inside its transaction."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._con.execute(sql, list(params)).fetchall()

    def coverage(self, accounts: Sequence[str]) -> dict[str, Coverage]:
        """Accounts whose latest sync was reconciled since (the statement is the ledger's as it
        landed), with what their syncs covered; an account never synced, or whose latest
        reconciliation failed or has not run yet, is absent: nothing of it closes now."""
        found = self._all(
            "SELECT s.account, s.covered, s.finished FROM (SELECT account, max(range_end) AS "
            f"covered, max(finished_at) AS finished FROM sync_runs WHERE {_IN} GROUP BY account) s "
            "JOIN (SELECT account, max(checked_at) AS checked FROM reconciliation_runs "
            "GROUP BY account) r ON r.account = s.account AND r.checked >= s.finished",
            [list(accounts)],
        )
        return {account: Coverage(covered, finished) for account, covered, finished in found}

    def months_from(self, accounts: Sequence[str]) -> dict[str, date | None]:
        """The first month each account's check must read (None: every month): the earliest of
        the first month a reconciliation rewrote since the account's last full check, and the
        month after its latest closed one. Every month when it was never checked, never closed,
        or a reconciliation since was a full pass (its reconciled_from NULL)."""
        found = self._all(
            "WITH a AS (SELECT unnest(?::VARCHAR[]) AS account), "
            "c AS (SELECT account, max(reconciled_through) AS through FROM statement_checks "
            "GROUP BY account), "
            "r AS (SELECT r.account, count(*) AS runs, "
            "count(*) FILTER (r.reconciled_from IS NULL) AS full_runs, "
            "min(r.reconciled_from) AS rewritten FROM reconciliation_runs r JOIN c "
            "ON c.account = r.account AND r.checked_at > c.through GROUP BY r.account), "
            "m AS (SELECT account, max(month) AS closed FROM statement_closes GROUP BY account) "
            "SELECT a.account, c.through IS NOT NULL, coalesce(r.full_runs, 0), r.rewritten, "
            "m.closed FROM a LEFT JOIN c USING (account) LEFT JOIN r USING (account) "
            "LEFT JOIN m USING (account)",
            [list(accounts)],
        )
        out: dict[str, date | None] = {}
        for account, checked, full_runs, rewritten, closed in found:
            if not checked or full_runs or closed is None:
                out[account] = None
                continue
            after_closed = (closed.replace(day=28) + timedelta(days=4)).replace(day=1)
            first = (
                after_closed if rewritten is None else min(rewritten.replace(day=1), after_closed)
            )
            out[account] = first
        return out

    def record_check(self, accounts: Sequence[str], checked_at: datetime) -> None:
        """Each account's check read every month it had to, through its latest reconciliation."""
        self._con.execute(
            "INSERT INTO statement_checks (account, checked_at, reconciled_through) "
            "SELECT account, ?, max(checked_at) FROM reconciliation_runs WHERE "
            f"{_IN} GROUP BY account",
            [checked_at, list(accounts)],
        )

    def months(
        self, accounts: Sequence[str], since: dict[str, date | None] | None = None
    ) -> list[dict[str, Any]]:
        """monthly_statement's rows of ``accounts`` (from each one's month in ``since``)."""
        names = ", ".join(STATEMENT_MONEY_COLUMNS)
        cursor = self._con.execute(
            f"SELECT account, month, {names}, entries FROM monthly_statement "
            f"JOIN {_FROM} USING (account) WHERE month >= f.from_month ORDER BY account, month",
            _from_params(accounts, since),
        )
        columns = [d[0] for d in cursor.description]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]

    def entry_type_lines(
        self, accounts: Sequence[str], since: dict[str, date | None] | None = None
    ) -> list[tuple[str, date, str, str, Decimal, int]]:
        """statement_lines' rows: (account, month, category, entry_type, amount, entries)."""
        return self._all(
            "SELECT account, month, category, entry_type, amount, entries FROM statement_lines "
            f"JOIN {_FROM} USING (account) WHERE month >= f.from_month",
            _from_params(accounts, since),
        )

    def totals(
        self, accounts: Sequence[str], since: dict[str, date | None] | None = None
    ) -> list[tuple[str, date, str, str | None, Decimal, int]]:
        """The month's movements per agent, campaign and channel: (account, month, dimension,
        value, amount, entries). One scan of the ledger for the three (grouping sets), not one
        each: the check runs after every sync, over every month. GROUPING() tells an entry
        without an agent (a NULL value, kept) from the other sets' rows."""
        dimensions = (("agent", "agent_id"), ("campaign", "campaign_id"), ("channel", "channel"))
        columns = ", ".join(column for _, column in dimensions)
        grouped = ", ".join(f"GROUPING({column})" for _, column in dimensions)
        sets = ", ".join(f"(account, entry_month, {column})" for _, column in dimensions)
        found = self._all(
            f"SELECT account, entry_month, {columns}, {grouped}, "
            f"CAST(sum(signed_amount) AS {MONEY_TYPE}), count(*) FROM ledger_enriched "
            f"JOIN {_FROM} USING (account) WHERE entry_month >= f.from_month "
            f"AND created_at >= f.from_month GROUP BY GROUPING SETS ({sets})",
            _from_params(accounts, since),
        )
        out: list[tuple[str, date, str, str | None, Decimal, int]] = []
        for account, month, *values_and_flags, amount, entries in found:
            values, flags = values_and_flags[:3], values_and_flags[3:]
            for (name, _), value, flag in zip(dimensions, values, flags, strict=True):
                if flag == 0:  # this row groups by this dimension
                    out.append((account, month, name, value, amount, entries))
        return out

    def latest(
        self, accounts: Sequence[str], since: dict[str, date | None] | None = None
    ) -> dict[tuple[str, date], StoredVersion]:
        """Each closed month's latest version (from each account's month in ``since``), with
        its lines and totals."""
        key = "account, month, version"
        latest = (
            f"SELECT statement_closes.* FROM statement_closes JOIN {_FROM} USING (account) "
            "WHERE month >= f.from_month "
            "QUALIFY row_number() OVER (PARTITION BY account, month ORDER BY version DESC) = 1"
        )
        params = _from_params(accounts, since)
        cursor = self._con.execute(latest, params)
        columns = [d[0] for d in cursor.description]
        out = {
            (row["account"], row["month"]): StoredVersion(row, [], [])
            for row in (dict(zip(columns, r, strict=True)) for r in cursor.fetchall())
        }
        keys = f"SELECT {key} FROM ({latest})"
        for account, month, line_no, line, entry_type, amount, entries in self._all(
            "SELECT account, month, line_no, line, entry_type, amount, entries "
            f"FROM statement_close_lines JOIN ({keys}) USING ({key}) ORDER BY line_no",
            params,
        ):
            out[(account, month)].lines.append((line_no, line, entry_type, amount, entries))
        for account, month, dimension, value, amount, entries in self._all(
            "SELECT account, month, dimension, value, amount, entries "
            f"FROM statement_close_totals JOIN ({keys}) USING ({key})",
            params,
        ):
            out[(account, month)].totals.append((dimension, value, amount, entries))
        return out

    def failures(self, accounts: Sequence[str]) -> dict[str, str]:
        """The failure line of each account whose latest sync failed (account_status)."""
        return dict(
            self._all(
                "SELECT account, last_failure FROM account_status WHERE "
                f"{_IN} AND last_failure IS NOT NULL AND (last_success_at IS NULL "
                "OR last_failure_at > last_success_at)",
                [list(accounts)],
            )
        )

    def record(
        self,
        closes: Sequence[dict[str, Any]],
        lines: Sequence[dict[str, Any]],
        totals: Sequence[dict[str, Any]],
        restatements: Sequence[dict[str, Any]],
    ) -> None:
        snapshot = self._lake_snapshot()
        insert_dicts(
            self._con, "statement_closes", [{**c, "lake_snapshot": snapshot} for c in closes]
        )
        insert_dicts(self._con, "statement_close_lines", lines)
        insert_dicts(self._con, "statement_close_totals", totals)
        insert_dicts(self._con, "statement_restatements", restatements)
        # A kill here, inside the transaction, must leave no close at all.
        failpoint("statement_close")

    def _lake_snapshot(self) -> int | None:
        """The lake snapshot this transaction reads; None on a file."""
        lake = current_lake(self._con)
        if lake is None:
            return None
        row = self._con.execute(f"FROM {quote(lake)}.current_snapshot()").fetchone()
        return int(row[0]) if row else None

    def queue(self, rows: Sequence[dict[str, Any]], again: bool = False) -> list[tuple[str, str]]:
        """Queues the closes' messages in the transaction that records them: a close is never
        recorded without its messages, nor a message without its close."""
        queued = queue_rows(self._con, rows, again)
        failpoint("statement_queued")
        return queued

    def unsent(self, accounts: Sequence[str]) -> list[tuple[str, date, int]]:
        """Latest versions to deliver whose messages no outbox row holds (an earlier version of
        creditlens recorded closes and queued their messages apart): (account, month, version).
        A close of several months at once (``first_close``) is sent by hand: never here."""
        return self._all(
            "SELECT c.account, c.month, c.version FROM statement_closes c "
            f"WHERE c.{_IN} AND NOT c.first_close "
            "QUALIFY row_number() OVER (PARTITION BY c.account, c.month "
            "ORDER BY c.version DESC) = 1 "
            "AND NOT EXISTS (SELECT 1 FROM message_outbox o WHERE o.event_id = "
            "'statement/' || c.account || '/' || strftime(c.month, '%Y-%m') || '/v' || c.version "
            "OR contains(o.subject_id, '[\"' || c.account || '\", \"' || strftime(c.month, "
            "'%Y-%m') || '\", ' || c.version || ']'))",
            [list(accounts)],
        )


@contextmanager
def open_statements(path: Path, lock_timeout_s: float) -> Iterator[StatementStore]:
    """A close check's reads and writes, all or nothing."""
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        yield StatementStore(con)
