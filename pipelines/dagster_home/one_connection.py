"""One SQLite connection per database for the CLI's Dagster storages, in place of one per
statement.

Dagster's SQLite storages, in memory and on disk, open a new connection for every read and every
write (SQLAlchemy's NullPool): a small sync asked them some 300 times in an ephemeral instance
(about 200 ms of its 1 s of CPU, 120-160 ms with one connection), and opened its run's event
file a hundred times in a persistent one. The storages built on this keep one connection per
database for their life.

The connection is opened to be shared between threads (``check_same_thread=False``): the account
workers of an agency's sync record events from their own threads, and a lock keeps a second
thread out until the first one's transaction has ended. A block entered inside another on the
same thread joins its transaction, where Dagster's own code would have opened a second
connection. On disk the databases are in WAL mode, where an idle connection holds no lock, so
the UI's process reads and writes the same files meanwhile. The databases, tables and rows are
Dagster's own: only how a statement reaches them changes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.pool import StaticPool


class OneConnection:
    """A database's one connection, in a transaction for each block, one thread at a time."""

    def __init__(self, url: str | URL, *, foreign_keys: bool, **connect_args: Any) -> None:
        """``foreign_keys``: what Dagster's storage of that database sets on every connection it
        opens (its in-memory ones do; its files do not), set once here."""
        self._engine = create_engine(
            url, poolclass=StaticPool, connect_args={**connect_args, "check_same_thread": False}
        )
        if foreign_keys:
            event.listen(self._engine, "connect", _foreign_keys_on)
        self._connection = self._engine.connect()
        self._lock = threading.RLock()

    @property
    def engine(self) -> Engine:
        """The engine of the one connection, for a storage's own set-up (Dagster's schema check
        of a new file) before the first transaction."""
        return self._engine

    @property
    def closed(self) -> bool:
        return self._connection.closed

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """The connection in a transaction, committed as the outermost block ends (rolled back
        if anything escapes it), as Dagster's ``connect`` gives one."""
        with self._lock:
            if self._connection.in_transaction():
                yield self._connection
                return
            with self._connection.begin():
                yield self._connection

    def sync_at_checkpoints(self) -> None:
        """In WAL mode, SQLite's ``synchronous=NORMAL``: a commit no longer waits for the disk
        (0.25 ms an event here), only a WAL checkpoint does. The database stays whole through a
        crash or a power loss; a power loss may take the last runs' events with it, never the
        warehouse's rows, which are DuckDB's. SQLite's own advice for WAL mode. A database in
        another journal mode keeps Dagster's setting."""
        with self.transaction() as conn:
            if str(conn.exec_driver_sql("PRAGMA journal_mode").scalar()).lower() == "wal":
                conn.exec_driver_sql("PRAGMA synchronous=NORMAL")

    def has_table(self, table_name: str) -> bool:
        with self.transaction() as conn:
            return bool(conn.dialect.has_table(conn, table_name))

    def close(self) -> None:
        with self._lock:
            self._connection.close()
            self._engine.dispose()


class ThroughOneConnection:
    """Put before an in-memory or SQLite run storage, or the in-memory event log, in the bases,
    and set ``_one`` in ``__init__``: every connection the storage asks for (``connect`` in a run
    storage, ``_connect`` in the in-memory event log) is a transaction on that one."""

    _one: OneConnection

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._one.transaction() as conn:
            yield conn

    _connect = connect

    def dispose(self) -> None:
        self._one.close()
        super().dispose()  # type: ignore[misc]


def _foreign_keys_on(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute("PRAGMA foreign_keys=ON")
