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

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import duckdb

from pipelines.runtime.failpoints import failpoint
from pipelines.warehouse.connection import open_for_write, transaction
from pipelines.warehouse.disk import is_disk_full

T = TypeVar("T")
R = TypeVar("R")

# What one account's write can raise that is its own: a bug in its rows (an invariant, a value
# DuckDB refuses), never the lock or the disk, which every account shares.
OWN_FAILURES: tuple[type[BaseException], ...] = (duckdb.Error, ValueError, RuntimeError)


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
    left_out: dict[object, R | BaseException] = {}
    pending = list(items)
    while pending:
        try:
            done = _one_transaction(
                path, lock_timeout_s, pending, write, key, setup, failpoint_name
            )
        except AccountLeftOut as out:
            left_out[out.key] = out.cause
            pending = [item for item in pending if key(item) != out.key]
            continue
        return {**left_out, **done}
    return left_out


def _one_transaction(
    path: Path,
    lock_timeout_s: float,
    items: Sequence[T],
    write: Callable[[duckdb.DuckDBPyConnection, T], R],
    key: Callable[[T], object],
    setup: Callable[[duckdb.DuckDBPyConnection], None] | None,
    failpoint_name: str | None,
) -> dict[object, R | BaseException]:
    done: dict[object, R | BaseException] = {}
    with open_for_write(path, lock_timeout_s) as con, transaction(con):
        if setup is not None:
            setup(con)
        for item in items:
            try:
                done[key(item)] = write(con, item)
            except OWN_FAILURES as exc:
                if is_disk_full(exc) or isinstance(exc, duckdb.OutOfMemoryException):
                    raise  # the installation's, not this account's: nothing is committed
                raise AccountLeftOut(key(item), exc) from exc
        if failpoint_name is not None:
            failpoint(failpoint_name)
    return done
