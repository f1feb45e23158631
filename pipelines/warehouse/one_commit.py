"""Many accounts' writes in one transaction, one account's failure still its own.

A sync of 50 accounts used to open the warehouse, take its lock, migrate-check, COMMIT and
CHECKPOINT 50 times for the ledger and 200 times for the snapshots: most of its time. Now each
step writes every account in one transaction. DuckDB has no savepoints, so an account cannot be
rolled back alone: everything that can be checked before is checked before (the ledger is staged
and validated on disk first), and an account whose write still fails inside the transaction
(its rows break the invariant, DuckDB refuses them) is named by ``AccountLeftOut``; the whole
transaction rolls back (nothing of anyone is written) and runs again without that account. A
failure that is nobody's own (the lock not taken, a full disk) fails every account of the step,
as it would have failed each of them one by one.

Crash safety is the single transaction's: a kill before its COMMIT leaves nothing, a kill after
leaves every account landed, and a rerun lands the same data.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from pipelines.runtime.failpoints import failpoint
from pipelines.warehouse.connection import open_for_write, transaction
from pipelines.warehouse.disk import is_disk_full

T = TypeVar("T")
R = TypeVar("R")

# What one account's write can raise that is its own: a bug in its rows (an invariant, a value
# DuckDB refuses), never the lock or the disk, which every account shares.
OWN_FAILURES: tuple[type[BaseException], ...] = (duckdb.Error, ValueError, RuntimeError)


class SharedStatementRefused(RuntimeError):
    """DuckDB refused a statement that writes several accounts' rows at once: whose, it cannot
    say, so the step is written again one account at a time, which names it."""


@contextlib.contextmanager
def shared_statements() -> Iterator[None]:
    """Statements over several accounts' rows: a refusal is ``SharedStatementRefused``; a full
    disk or memory is the installation's and stays what it is."""
    try:
        yield
    except duckdb.Error as exc:
        if is_disk_full(exc) or isinstance(exc, duckdb.OutOfMemoryException):
            raise
        raise SharedStatementRefused(str(exc)) from exc


class AccountLeftOut(Exception):
    """Raised inside the transaction: ``key``'s write failed on its own (``cause``)."""

    def __init__(self, key: object, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.key = key
        self.cause = cause


def write_each_in_one_commit(
    path: Path,
    lock_timeout_s: float,
    items: Sequence[T],
    write: Callable[[duckdb.DuckDBPyConnection, T], R],
    *,
    key: Callable[[T], object],
    setup: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
    failpoint_name: str | None = None,
) -> dict[object, R | BaseException]:
    """``write`` for every item in ONE transaction; per item's key, what it returned, or what it
    raised on its own (those items are left out of the commit, the others land)."""

    def each(con: duckdb.DuckDBPyConnection, pending: Sequence[T]) -> dict[object, R]:
        done: dict[object, R] = {}
        for item in pending:
            try:
                done[key(item)] = write(con, item)
            except OWN_FAILURES as exc:
                if is_disk_full(exc) or isinstance(exc, duckdb.OutOfMemoryException):
                    raise  # the installation's, not this account's: nothing is committed
                raise AccountLeftOut(key(item), exc) from exc
        return done

    return write_all_in_one_commit(
        path, lock_timeout_s, items, each, key=key, setup=setup, failpoint_name=failpoint_name
    )


def write_all_in_one_commit(
    path: Path,
    lock_timeout_s: float,
    items: Sequence[T],
    write_all: Callable[[duckdb.DuckDBPyConnection, Sequence[T]], dict[object, R]],
    *,
    key: Callable[[T], object],
    setup: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
    failpoint_name: str | None = None,
) -> dict[object, R | BaseException]:
    """``write_all`` over every item at once, in ONE transaction: a few statements for all the
    accounts instead of a few per account. An item it names as failing on its own
    (``AccountLeftOut``) is left out, and the transaction runs again without it."""
    left_out: dict[object, R | BaseException] = {}
    pending = list(items)
    while pending:
        try:
            with open_for_write(path, lock_timeout_s) as con, transaction(con):
                if setup is not None:
                    setup(con)
                done = write_all(con, pending)
                if failpoint_name is not None:
                    failpoint(failpoint_name)
        except AccountLeftOut as out:
            left_out[out.key] = out.cause
            pending = [item for item in pending if key(item) != out.key]
            continue
        return {**left_out, **done}
    return left_out


def write_together_in_one_commit(
    path: Path,
    lock_timeout_s: float,
    items: Sequence[T],
    write_all: Callable[[duckdb.DuckDBPyConnection, Sequence[T]], dict[object, R]],
    *,
    key: Callable[[T], object],
    setup: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
    failpoint_name: str | None = None,
) -> dict[object, R | BaseException]:
    """``write_all`` over every item at once; if DuckDB refuses one of its shared statements
    (``shared_statements``), ``write_all`` again item by item, which names whose rows they were
    (with DuckDB's own error): the same outcome either way, in a few statements when nothing is
    wrong."""
    options: dict[str, Any] = {"key": key, "setup": setup, "failpoint_name": failpoint_name}
    try:
        return write_all_in_one_commit(path, lock_timeout_s, items, write_all, **options)
    except SharedStatementRefused:

        def alone(con: duckdb.DuckDBPyConnection, item: T) -> R:
            try:
                return write_all(con, [item])[key(item)]
            except SharedStatementRefused as refused:  # one item's statement: its own error
                raise refused.__cause__ or refused from None

        return write_each_in_one_commit(path, lock_timeout_s, items, alone, **options)
