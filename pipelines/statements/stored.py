"""A stored close read back as the statement (and restatement) it was, for its messages."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from pipelines.statements.close import stored_statement
from pipelines.statements.closed import ClosedStatement, Restatement
from pipelines.statements.closing import changes
from pipelines.warehouse.statement_read import stored_version
from pipelines.warehouse.writer import Warehouse

# A stored close, its restatement when it is one: what a message's files are rendered from.
Loaded = tuple[ClosedStatement, Restatement | None]
Loader = Callable[[str, date, int], Loaded | None]


def load_close(warehouse: Warehouse, account: str, month: date, version: int) -> Loaded | None:
    """The version, and for a restatement (version 2 on) what it restated and how."""

    def read(number: int) -> ClosedStatement | None:
        found = stored_version(warehouse.path, warehouse.lock_timeout_s, account, month, number)
        return None if found is None else stored_statement(found)

    current = read(version)
    if current is None:
        return None
    previous = read(version - 1) if version > 1 else None
    if previous is None:
        return current, None
    return current, Restatement(previous, current, changes(previous, current))


def stored_loader(warehouse: Warehouse) -> Loader:
    """``load_close`` of this warehouse."""
    return lambda account, month, version: load_close(warehouse, account, month, version)
