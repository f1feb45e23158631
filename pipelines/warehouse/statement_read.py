"""Reading the closed statements back, for `creditlens statements list` and the report site:
what was closed, when and how each month was restated, and where its messages went.

Read-only, through the one read door; an older warehouse (before migration 13) has nothing to
read, which is "no closed statements", not an error. A version is never rewritten, so a stored
version read back (``stored_version``) is what was closed, and a message sent again carries the
same files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.read import ReadConnection, open_read_only, rows, table_names
from pipelines.warehouse.statement_store import StoredVersion
from transforms.aggregate import STATEMENT_MONEY_COLUMNS


@dataclass(frozen=True)
class Restated:
    """One figure a restatement changed: "restated on 2026-11-05 (was X, now Y)"."""

    month: date
    version: int
    restated_at: datetime
    line: str
    was: Decimal
    now: Decimal
    why: str

    def sentence(self) -> str:
        return (
            f"{self.line}: restated on {self.restated_at:%Y-%m-%d} (was {self.was}, now "
            f"{self.now}): {self.why}"
        )


@dataclass(frozen=True)
class ClosedMonth:
    account: str
    month: date
    version: int
    closing: Decimal
    first_closed_at: datetime
    restated_at: datetime | None
    first_close: bool
    delivered: str | None  # "finance 2026-11-03T08:00:00Z, ..." from the outbox
    pending: int
    changes: list[str] = field(default_factory=list)


def restatements(con: ReadConnection, tables: set[str], account: str) -> dict[date, list[Restated]]:
    """Per month of ``account``, every figure restated, oldest first, in the statement's order:
    its summary lines (opening ... closing), then the entry-type lines, then the totals by
    agent, campaign and channel."""
    if "statement_restatements" not in tables:
        return {}
    out: dict[date, list[Restated]] = {}
    found = rows(
        con,
        "SELECT month, version, restated_at, line, was, now, why FROM statement_restatements "
        "WHERE account = ?",
        [account],
    )
    for row in sorted(found, key=lambda r: (r[0], r[1], _line_rank(r[3]), r[3])):
        out.setdefault(row[0], []).append(Restated(*row))
    return out


def _line_rank(line: str) -> tuple[int, int]:
    """A summary line at its place; an entry type's line (``credits TopUp``) right after the
    line it makes up; the agent, campaign and channel totals last."""
    head = line.split(" ", 1)[0]
    if head in STATEMENT_MONEY_COLUMNS:
        return STATEMENT_MONEY_COLUMNS.index(head), 0 if head == line else 1
    return len(STATEMENT_MONEY_COLUMNS), 0


def closes(con: ReadConnection, tables: set[str], account: str) -> dict[date, str]:
    """Per closed month of ``account``, one sentence: when it was closed, and its version."""
    if "closed_statements" not in tables:
        return {}
    return {
        month: f"Closed on {first:%Y-%m-%d}"
        + (f", restated (version {version})." if version > 1 else ".")
        for month, version, first in rows(
            con,
            "SELECT month, version, first_closed_at FROM closed_statements WHERE account = ?",
            [account],
        )
    }


def _deliveries(con: ReadConnection, tables: set[str]) -> dict[tuple[str, str], tuple[str, int]]:
    """(account, YYYY-MM) -> (channels that took its messages and when, messages waiting), from
    the outbox rows whose event_id names a statement (``statement/ACCOUNT/YYYY-MM/vN``)."""
    # A warehouse not yet upgraded to version 17 (a reader never upgrades) has the old name.
    outbox = next((t for t in ("message_outbox", "alert_outbox") if t in tables), None)
    if outbox is None:
        return {}
    found = rows(
        con,
        "SELECT regexp_extract(event_id, '^statement/(.*)/([0-9]{4}-[0-9]{2})/v[0-9]+$', 1), "
        "regexp_extract(event_id, '^statement/(.*)/([0-9]{4}-[0-9]{2})/v[0-9]+$', 2), "
        "string_agg(CASE WHEN status = 'sent' THEN channel || ' ' || "
        "strftime(sent_at, '%Y-%m-%dT%H:%M:%SZ') END, ', ' ORDER BY sent_at), "
        f"count(*) FILTER (WHERE status <> 'sent') FROM {outbox} "
        "WHERE event_id LIKE 'statement/%' GROUP BY 1, 2",
    )
    return {(a, m): (d, int(p)) for a, m, d, p in found if a}


def read_statements(path: Path, lock_timeout_s: float, account: str | None) -> list[ClosedMonth]:
    """Every closed month (of ``account``), newest month first per account."""
    if not warehouse_exists(path):
        return []
    with open_read_only(path, lock_timeout_s) as con:
        tables = table_names(con)
        if "closed_statements" not in tables:
            return []
        found = rows(
            con,
            "SELECT c.account, c.month, c.version, c.closing, c.first_closed_at, c.restated_at, "
            "f.first_close FROM closed_statements c JOIN statement_closes f "
            "ON f.account = c.account AND f.month = c.month AND f.version = 1 "
            "WHERE ? IS NULL OR c.account = ? ORDER BY c.account, c.month DESC",
            [account, account],
        )
        sent = _deliveries(con, tables)
        changed = {name: restatements(con, tables, name) for name in {r[0] for r in found}}
    out = []
    for name, month, *rest in found:
        delivered, pending = sent.get((name, f"{month:%Y-%m}"), (None, 0))
        lines = [r.sentence() for r in changed[name].get(month, [])]
        out.append(ClosedMonth(name, month, *rest, delivered, pending, lines))  # type: ignore[arg-type]
    return out


_KEY = "account = ? AND month = ? AND version = ?"


def stored_version(
    path: Path, lock_timeout_s: float, account: str, month: date, version: int
) -> StoredVersion | None:
    """The version as stored (row, lines in order, totals); None when there is none."""
    key = [account, month, version]
    with open_read_only(path, lock_timeout_s) as con:
        cursor = con.execute(f"SELECT * FROM statement_closes WHERE {_KEY}", key)
        found = cursor.fetchall()
        if not found:
            return None
        columns = [d[0] for d in cursor.description]
        stored = StoredVersion(dict(zip(columns, found[0], strict=True)), [], [])
        stored.lines.extend(
            rows(
                con,
                "SELECT line_no, line, entry_type, amount, entries FROM statement_close_lines "
                f"WHERE {_KEY} ORDER BY line_no",
                key,
            )
        )
        stored.totals.extend(
            rows(
                con,
                "SELECT dimension, value, amount, entries FROM statement_close_totals "
                f"WHERE {_KEY} ORDER BY dimension, value NULLS LAST",
                key,
            )
        )
    return stored
