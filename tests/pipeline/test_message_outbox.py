"""The outbox renamed for what it carries (migration 17): a warehouse of version 16 with messages
waiting upgrades in place, every row kept, and the old name still reads them, as a view."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from pipelines.warehouse.connection import migrate
from pipelines.warehouse.outbox import claim, queue_rows
from pipelines.warehouse.rows import insert_dicts
from pipelines.warehouse.schema import latest_version
from pipelines.warehouse.writer import Warehouse

QUEUED = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
SENT = QUEUED + timedelta(minutes=1)
DIGEST = 'statements/digest:{"closed": [["acme", "2026-10", 1]], "restated": []}'


def _message(event_id: str, about: str, channel: str, **sending: Any) -> dict[str, Any]:
    """An outbox row as a version-16 warehouse holds it: its subject under ``alert_id``."""
    return {
        "event_id": event_id,
        "alert_id": about,
        "channel": channel,
        "status": "pending",
        "title": f"title of {event_id}",
        "body": f"text of {event_id}",
        "attempts": 0,
        "enqueued_at": QUEUED,
        "next_attempt_at": None,
        "claimed_at": None,
        "sent_at": None,
        "claimed_by": None,
        "last_error": None,
        **sending,
    }


MESSAGES = [
    _message("al-0123456789ab/1", "al-0123456789ab", "ops", status="sent", attempts=1,
             claimed_at=QUEUED, sent_at=SENT, claimed_by="host:1"),
    _message("al-0123456789ab/1", "al-0123456789ab", "mail", attempts=1,
             next_attempt_at=SENT, last_error="MAIL_URL: the connection was refused"),
    _message("statement/acme/2026-10/v1", "statement/acme/2026-10", "finance"),
    _message("statements/digest/2026-10/abcdef012345", DIGEST, "finance"),
]  # fmt: skip

FIRING = {
    "event_id": "al-0123456789ab/1",
    "alert_id": "al-0123456789ab",
    "seq": 1,
    "rule": "low-balance",
    "kind": "balance_below",
    "account": "acme",
    "dimension_value": None,
    "state": "firing",
    "measured": "10",
    "threshold": "100",
    "severity": "error",
    "evidence": "The balance is 10 credits, below 100.",
    "occurred_at": QUEUED,
    "reason": None,
    "acted_by": None,
}

ORDER = " ORDER BY event_id, channel"


def _version_16(path: Path) -> list[tuple[Any, ...]]:
    """A warehouse left at version 16 with an alert and messages waiting; its outbox's rows."""
    with duckdb.connect(str(path)) as con:
        assert migrate(con, up_to=16) == 16
        insert_dicts(con, "alert_events", [FIRING])
        insert_dicts(con, "alert_outbox", MESSAGES)
        return con.execute("SELECT * FROM alert_outbox" + ORDER).fetchall()


def test_the_outbox_of_an_older_warehouse_is_renamed_with_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "v16.duckdb"
    before = _version_16(path)
    assert len(before) == len(MESSAGES)
    Warehouse(path, lock_timeout_s=60).ensure()
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT max(version) FROM schema_version").fetchone() == (
            latest_version(),
        )
        # Every row, each field as it was, its subject under the new name.
        assert con.execute("SELECT * FROM message_outbox" + ORDER).fetchall() == before
        columns = [r[0] for r in con.execute("DESCRIBE message_outbox").fetchall()]
        assert columns[:3] == ["event_id", "subject_id", "channel"]
        # The old name is a view now, with the old columns, reading the same rows.
        old = con.execute("SELECT * FROM alert_outbox" + ORDER)
        assert [d[0] for d in old.description] == list(MESSAGES[0])
        assert old.fetchall() == before
        (comment,) = con.execute(
            "SELECT comment FROM duckdb_views() WHERE view_name = 'alert_outbox'"
        ).fetchone() or (None,)
        assert comment and "Deprecated" in comment and "message_outbox" in comment
        assert "next release" in comment
        tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert "alert_outbox" not in tables and "message_outbox" in tables
        # The alerts view reads the renamed outbox: one channel took it, one still waits.
        assert con.execute("SELECT delivered, pending FROM alerts").fetchall() == [
            ("ops 2026-11-02T08:01:00Z", 1)
        ]


def test_a_migrated_outbox_queues_and_sends_as_a_new_one(tmp_path: Path) -> None:
    """The rows queued before the upgrade are claimed with their subject; a rerun's rows are
    still recognised as queued, whatever name they were queued under."""
    path = tmp_path / "v16.duckdb"
    _version_16(path)
    warehouse = Warehouse(path, lock_timeout_s=60)
    warehouse.ensure()
    now = QUEUED + timedelta(hours=1)
    claimed = claim(path, 60, now, timedelta(minutes=10), "me", with_files=True)
    assert sorted((r.event_id, r.subject_id) for r in claimed.rows) == [
        ("statement/acme/2026-10/v1", "statement/acme/2026-10"),
        ("statements/digest/2026-10/abcdef012345", DIGEST),
    ]
    with duckdb.connect(str(path)) as con:
        again = [{k: v for k, v in m.items() if k != "alert_id"} for m in MESSAGES]
        for row, message in zip(again, MESSAGES, strict=True):
            row["subject_id"] = message["alert_id"]
        assert queue_rows(con, again) == []  # already there: nothing queued twice
