"""One SQLite connection for each in-memory database of the CLI's ephemeral instance.

Dagster's in-memory storages open a new SQLite connection to their database for every read and
every write (SQLAlchemy's NullPool), and run two PRAGMAs on it each time. A small sync asks them
some 300 times: about a fifth of its CPU went to the storages, most of it to those connections
(about 200 ms of a 1 s sync, 120-160 ms with one connection, measured side by side).

Each storage here keeps one connection for its life and hands it out one thread at a time: the
account workers of an agency's sync record events from their own threads, so the connection is
opened to be shared between threads (``check_same_thread=False``) and a lock keeps a second
thread out until the first one's transaction has ended. A block entered inside another on the
same thread joins its transaction, where Dagster's own code would have opened a second
connection. The database, its tables and the rows written are Dagster's own: only how a
statement reaches it changes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool


class OneConnection:
    """Put before an in-memory Dagster storage in the bases; its ``connect`` (or ``_connect``)
    then yields from ``_one_transaction``."""

    _engine: Engine  # the storage's own, whose held connection keeps the database alive
    _one_engine: Engine
    _one: Connection
    _one_lock: threading.RLock

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # the storage creates its database
        self._one_engine = create_engine(
            self._engine.url, poolclass=StaticPool, connect_args={"check_same_thread": False}
        )
        # Dagster sets it on every connection it opens; this one is opened once.
        event.listen(self._one_engine, "connect", _foreign_keys_on)
        self._one = self._one_engine.connect()
        self._one_lock = threading.RLock()

    @contextmanager
    def _one_transaction(self) -> Iterator[Connection]:
        """The connection in a transaction, committed as the outermost block ends (rolled back
        if anything escapes it), as Dagster's ``connect`` gives one."""
        with self._one_lock:
            if self._one.in_transaction():
                yield self._one
                return
            with self._one.begin():
                yield self._one

    def has_table(self, table_name: str) -> bool:
        """Asked by the event log (once per table: pipelines/dagster_home/batching.py caches
        it) through the same connection, not one of its own."""
        with self._one_transaction() as conn:
            return bool(conn.dialect.has_table(conn, table_name))

    def dispose(self) -> None:
        with self._one_lock:
            self._one.close()
            self._one_engine.dispose()
        super().dispose()  # type: ignore[misc]


def _foreign_keys_on(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute("PRAGMA foreign_keys=ON")
