"""Dagster's storages are stamped and checked at the head revision of their schema though the
CLI reads alembic's revision scripts once per process (pipelines/dagster_home/alembic_scripts.py):
an in-memory instance's two databases, and each database of a SQLite folder, say the revision
the installed Dagster's script files say, read afresh here."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import dagster
from alembic.script import ScriptDirectory
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from sqlalchemy import text

from pipelines.dagster_home.ephemeral import ephemeral_instance
from pipelines.dagster_home.storage import BatchingSqliteEventLogStorage
from tests.conftest import Disposing

SCRIPTS = Path(dagster.__file__).parent / "_core" / "storage" / "alembic"


def head() -> str:
    """Read from the files, not through the CLI's cache: a new ScriptDirectory of its own."""
    found = ScriptDirectory(str(SCRIPTS)).get_current_head()
    assert found
    return found


def stamped(connection: object) -> list[str]:
    rows = connection.execute(text("SELECT version_num FROM alembic_version"))  # type: ignore[attr-defined]
    return [row[0] for row in rows]


def test_an_ephemeral_instance_is_stamped_at_the_head_revision_every_time() -> None:
    for _ in range(3):  # the first reads the scripts, the next ones reuse what it read
        with ephemeral_instance() as instance:
            for storage in (instance.run_storage, instance.event_log_storage):
                assert stamped(storage._held_conn) == [head()]  # type: ignore[attr-defined]


def test_a_sqlite_folder_is_stamped_and_reopened_at_the_head_revision(
    tmp_path: Path, disposing: Disposing
) -> None:
    for _ in range(2):  # created, then opened again and checked against the head
        disposing(SqliteRunStorage.from_local(str(tmp_path / "history")))
        events = disposing(BatchingSqliteEventLogStorage(str(tmp_path / "history" / "runs")))
        events.get_records_for_run("no-such-run")
    databases = [tmp_path / "history" / "runs.db", tmp_path / "history" / "runs" / "index.db"]
    for database in databases:
        with sqlite3.connect(database) as con:
            assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [(head(),)]
