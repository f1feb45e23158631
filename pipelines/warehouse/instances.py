"""DuckDB instances kept warm between opens of the warehouse, so an open costs an ATTACH.

Starting a DuckDB instance costs about 20 ms whatever the file (its catalog of built-in
functions, its buffer manager, its threads); attaching a file to a running instance about 3 ms.
A sync opens the warehouse some twenty times (each step, each check, each question the pipeline
asks), and an agency's sync that many times per account, so the instances are kept and reused.

Each instance serves one open at a time and has exactly one file attached while it does: its
global settings (memory limit, spill folder) are then that open's alone, as they were when every
open started an instance of its own, and a query of ``information_schema`` sees that file only.
When the open ends the file is detached, which releases DuckDB's lock on it: between opens this
process holds nothing, so other processes (a Dagster step, a report) get the warehouse as before.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from pipelines.warehouse.sql_text import literal

__all__ = ["DUCKDB_THREADS_ENV", "attached", "parse_duckdb_threads"]

# Threads per DuckDB instance, read when one starts; unset, DuckDB's default (a thread per core
# it detects). Settings declares the variable with the rule below, so a bad value stops a command
# before anything opens the warehouse; one that reaches here anyway is left to DuckDB's default.
DUCKDB_THREADS_ENV = "CREDITLENS_DUCKDB_THREADS"


def parse_duckdb_threads(value: object) -> int | None:
    """The threads a value of CREDITLENS_DUCKDB_THREADS asks for; None when it is unset."""
    text = "" if value is None else str(value).strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError("must be a whole number of at least 1")
    return int(text)


# Idle instances kept for reuse: one per thread that opens the warehouse at the same moment (the
# account workers of an agency's sync); beyond this an instance is closed when its open ends.
KEEP_IDLE = 4

_idle: list[duckdb.DuckDBPyConnection] = []
_inherited: list[list[duckdb.DuckDBPyConnection]] = []
_guard = threading.Lock()
_aliases = itertools.count()


def _forget_in_child() -> None:
    """A forked child cannot use its parent's instances, nor close them (closing joins threads
    that stayed with the parent: a crash): they are set aside, untouched, and it starts its own."""
    global _guard, _idle
    _inherited.append(_idle)
    _idle = []
    _guard = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)


def _take() -> duckdb.DuckDBPyConnection:
    with _guard:
        if _idle:
            return _idle.pop()
    instance = duckdb.connect(":memory:")
    # TIMESTAMPTZ reads back as UTC, not the host's zone (once ICU is loaded: not in config).
    instance.execute("SET GLOBAL TimeZone = 'UTC'")
    if threads := _threads():
        instance.execute(f"SET threads = {threads}")
    return instance


def _threads() -> int | None:
    try:
        return parse_duckdb_threads(os.environ.get(DUCKDB_THREADS_ENV))
    except ValueError:
        return None


def _give_back(instance: duckdb.DuckDBPyConnection) -> None:
    with _guard:
        if len(_idle) < KEEP_IDLE:
            _idle.append(instance)
            return
    instance.close()


@contextmanager
def attached(
    path: Path, *, read_only: bool, memory_limit: str, storage_version: str | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection whose unqualified names are ``path``'s tables, for the block. DuckDB's own
    errors (a file that is not a database, a full disk) are raised as they come.
    ``storage_version``: the oldest DuckDB that must read a file created here."""
    instance = _take()
    alias = f"warehouse_{next(_aliases)}"
    try:
        # The spill folder DuckDB gives a database file of its own: beside it, not the cwd.
        instance.execute(f"SET temp_directory = {literal(str(path) + '.tmp')}")
        instance.execute(f"SET memory_limit = {literal(memory_limit)}")
        options = ["READ_ONLY"] if read_only else []
        if storage_version:
            options.append(f"STORAGE_VERSION {literal(storage_version)}")
        mode = f" ({', '.join(options)})" if options else ""
        instance.execute(f"ATTACH {literal(str(path))} AS {alias}{mode}")
    except BaseException:
        instance.close()
        raise
    failed = True
    try:
        con = instance.cursor()
        try:
            con.execute(f"USE {alias}")
            yield con
        finally:
            con.close()
        failed = False
    finally:
        _detach(instance, alias, raise_errors=not failed)


def _detach(instance: duckdb.DuckDBPyConnection, alias: str, *, raise_errors: bool) -> None:
    """Detaching closes the file (and releases DuckDB's lock on it); an instance that could not
    detach is closed instead, which closes the file all the same. Its error is raised unless
    the block already failed with one of its own."""
    try:
        instance.execute(f"DETACH {alias}")
    except duckdb.Error:
        instance.close()
        if raise_errors:
            raise
        return
    _give_back(instance)
