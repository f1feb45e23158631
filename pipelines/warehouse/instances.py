"""DuckDB instances kept warm between opens of the warehouse, so an open costs an ATTACH.

Starting a DuckDB instance costs about 20 ms whatever the file (its catalog of built-in
functions, its buffer manager, its threads); attaching a file to a running instance about 3 ms.
A sync opens the warehouse some twenty times (each step, each check, each question the pipeline
asks), and an agency's sync that many times per account, so the instances are kept and reused.

Each instance serves one open at a time and has exactly one file attached while it does: its
memory limit is then that open's alone, as it was when every open started an instance of its
own, and a query of ``information_schema`` sees that file only. When the open ends the file is
detached, which releases DuckDB's lock on it: between opens this process holds nothing, so other
processes (a Dagster step, a report) get the warehouse as before.

The spill folder is the one setting an instance cannot change per open: once DuckDB has spilled
to it, it refuses to switch ("Cannot switch temporary directory after the current one has been
used"), which failed large syncs when a warm instance moved from the warehouse to the analyst
copy. So each instance gets a folder of its own when it starts, beside the files it then serves
(an instance only serves files of the folder it started for), and never changes it. An instance
that spilled is closed when its open ends, not kept: DuckDB then removes the folder it made.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import itertools
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import duckdb

from pipelines.warehouse import extensions
from pipelines.warehouse.errors import WarehouseError, cannot_open
from pipelines.warehouse.lake import Lake, lake_at, s3_secret_sql, shown
from pipelines.warehouse.sql_text import literal

__all__ = [
    "DUCKDB_MEMORY_LIMIT_ENV",
    "DUCKDB_THREADS_ENV",
    "SPILL_PREFIX",
    "WAREHOUSE_STORAGE_VERSION",
    "NoWarehouseYet",
    "OutOfMemory",
    "attached",
    "limit_memory",
    "parse_duckdb_threads",
    "parse_memory_limit",
    "spilled_instances",
    "warehouse_exists",
]


class _PandasAbsent(importlib.abc.MetaPathFinder):
    """Says at once that pandas is not installed, where it is not.

    DuckDB's Python client imports pandas before it binds each parameter of a statement (to
    tell a pandas value from a plain one), and without pandas every attempt searches every
    folder on ``sys.path`` again: about 0.2 ms a parameter, 60% of a small statement's cost and
    some 3% of a sync-heavy test's CPU. Answering "not found" from the first finder keeps the
    lookup but not the search. Only where the search found nothing, once, at import: an
    environment with pandas imports it the first time and never searches again."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def _say_pandas_absent() -> None:
    if "pandas" in sys.modules or any(isinstance(f, _PandasAbsent) for f in sys.meta_path):
        return
    if importlib.util.find_spec("pandas") is None:
        sys.meta_path.insert(0, _PandasAbsent())


_say_pandas_absent()

# The storage format of every file creditlens creates, unless its opener names an older reader
# (the analyst copy: DuckDB 1.4). DuckDB 1.5 still creates files in 1.0's format by default, whose
# catalog costs four times as much to attach and twice as much to checkpoint (a small warehouse's
# 476 columns, side by side: 15.7 ms against 3.7 an attach, 24 against 12 a checkpoint; 2.4 ms an
# attach on a quiet machine), and a daily sync attaches the warehouse some 25 times. DuckDB 1.5
# and later read it; a file keeps the format it was created in, so a warehouse created before
# stays in 1.0's.
WAREHOUSE_STORAGE_VERSION = "v1.5.0"

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


# The most memory any one DuckDB query of creditlens may hold, read when an open sets its limit;
# unset, each step's own limit (512MB for most opens, less where a step asks for less) applies.
# Settings declares the variable with the rule below; a bad value that reaches here is ignored.
DUCKDB_MEMORY_LIMIT_ENV = "CREDITLENS_DUCKDB_MEMORY_LIMIT"

# DuckDB's own units: KB, MB, GB and TB count in thousands, KiB to TiB in 1024s.
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?)B\s*", re.IGNORECASE)
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}


def parse_memory_limit(value: object) -> str | None:
    """The size a value of CREDITLENS_DUCKDB_MEMORY_LIMIT asks for, in DuckDB's syntax; None when
    it is unset."""
    text = "" if value is None else str(value).strip()
    if not text:
        return None
    if _bytes(text) < 1024 * 1024:
        raise ValueError("must be a size DuckDB reads, of at least 1MB, such as 512MB or 2GiB")
    return text.replace(" ", "")


def _bytes(size: str) -> int:
    """``size`` in bytes; 0 when it is not a size DuckDB reads."""
    match = _SIZE.fullmatch(size)
    if not match:
        return 0
    number, power, binary = match.groups()
    return int(Decimal(number) * (1024 if binary else 1000) ** _POWERS[power.upper()])


def capped(limit: str) -> str:
    """``limit``, or the installation's CREDITLENS_DUCKDB_MEMORY_LIMIT where that is lower."""
    try:
        cap = parse_memory_limit(os.environ.get(DUCKDB_MEMORY_LIMIT_ENV))
    except ValueError:
        return limit
    return cap if cap is not None and _bytes(cap) < _bytes(limit) else limit


def limit_memory(con: duckdb.DuckDBPyConnection, limit: str) -> None:
    """Sets the open's memory limit (DuckDB's syntax, e.g. '128MB'), lowered to the
    installation's cap: past it DuckDB spills to the instance's folder. Work inside an open
    sets a limit only through here, which tells the open's instance."""
    if not _bytes(limit):
        raise ValueError(f"not a DuckDB memory size: {limit!r}")
    con.execute(f"SET memory_limit = {literal(capped(limit))}")
    # Work inside an open that sets its own (the landing's, the reconciliation's) changes its
    # instance's: the next open of it sets the open's again.
    for instance in _in_use.stack:
        instance.limit.clear()


class NoWarehouseYet(WarehouseError):
    """A lake's catalog that holds no warehouse yet: for a reader, no warehouse at all."""


def warehouse_exists(path: Path) -> bool:
    """Whether there is a warehouse at ``path``: the file, or a lake whose catalog holds one
    (its stand-in file is there from the first settings that name it, before any lake is).
    Every "is there a warehouse yet" asks this; a lake that cannot be reached still raises, the
    first time this process asks (after a yes, the next open is what raises)."""
    lake = lake_at(path)
    if lake is None:
        return path.exists()
    with _guard:
        if lake.location in _lakes_found:
            return True
    try:
        with attached(path, read_only=True, memory_limit="64MB") as con:
            found = con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
                "AND table_name = 'schema_version'"
            ).fetchone()
    except NoWarehouseYet:
        return False
    except duckdb.Error as exc:  # a lake attached earlier whose catalog is gone: as any open says
        raise cannot_open(lake.location, exc) from None
    if found and found[0]:
        with _guard:
            _lakes_found.add(lake.location)
        return True
    return False


# Lakes this process found a warehouse in. creditlens never removes one, so the answer holds for
# the process: asking a lake's catalog costs a query (about 35 ms), and a daily sync asked it 16
# times (its readers of outcomes, days, findings). A catalog dropped under a running process is
# still one line, at its next open.
_lakes_found: set[str] = set()


class OutOfMemory(WarehouseError):
    """DuckDB needed more than its memory limit and could not spill the rest to disk."""


def _out_of_memory(path: Path, limit: str, in_force: str | None = None) -> OutOfMemory:
    """``in_force``: the limit DuckDB held when it ran out, as it says it (the work may have
    set its own, lower than the open's: the reconciliation's 64MB)."""
    cap = os.environ.get(DUCKDB_MEMORY_LIMIT_ENV, "").strip()
    if cap and capped(limit) != limit:
        remedy = f"raise {DUCKDB_MEMORY_LIMIT_ENV} (now {cap}) or unset it"
    else:
        remedy = "free memory on this machine"
    return OutOfMemory(
        f"DuckDB ran out of memory ({in_force or capped(limit)} allowed) working on "
        f"{shown(path)}: nothing was changed; {remedy}, then run the command again"
    )


def _limit_in_force(connection: duckdb.DuckDBPyConnection) -> str | None:
    try:
        row = connection.execute("SELECT current_setting('memory_limit')").fetchone()
    except duckdb.Error:
        return None
    return str(row[0]) if row else None


# Each instance's spill folder, in the folder of the files it serves: the process and a count
# make it its own (two instances sharing one would delete each other's files when they close).
SPILL_PREFIX = ".creditlens-spill-"


@dataclass(frozen=True)
class _Instance:
    connection: duckdb.DuckDBPyConnection
    folder: str  # the folder of the files it serves, or the lake it keeps attached
    spill: str  # its spill folder, inside ``folder``, made by DuckDB when it first spills
    # A lake stays attached between opens (its alias here): attaching one costs a catalog's
    # round trips (about 160 ms against 9 ms for an open of an attached one), and each new
    # transaction still reads the lake's latest snapshot, other hosts' commits included.
    lakes: dict[str, str] = field(default_factory=dict)
    # The memory limit it holds, as its last open set it; empty where work may have changed it.
    # Setting one costs about 1.5 ms (DuckDB resizes its buffer pool), 1% of a daily sync.
    limit: list[str] = field(default_factory=list)

    def close(self) -> None:
        """Closing removes the spill folder DuckDB made, with what is in it."""
        self.connection.close()


# Idle instances kept for reuse: one per thread that opens the warehouse at the same moment (the
# account workers of an agency's sync); beyond this the longest idle is closed. An open takes an
# idle instance of its file's folder, the most recently used first.
KEEP_IDLE = 4

_idle: list[_Instance] = []
_inherited: list[list[_Instance]] = []
_guard = threading.Lock()
_aliases = itertools.count()
_spills = itertools.count()
_spilled = [0]


class _InUse(threading.local):
    """The instances this thread's open blocks are in, innermost last."""

    def __init__(self) -> None:
        self.stack: list[_Instance] = []


_in_use = _InUse()


def spilled_instances() -> int:
    """How many of this process's instances spilled to disk (and were closed for it): what a
    benchmark or a test reads to know that DuckDB did spill."""
    with _guard:
        return _spilled[0]


def _forget_in_child() -> None:
    """A forked child cannot use its parent's instances, nor close them (closing joins threads
    that stayed with the parent: a crash): they are set aside, untouched, and it starts its own."""
    global _guard, _idle, _in_use
    _inherited.append(_idle)
    _idle = []
    _guard = threading.Lock()
    _in_use = _InUse()


os.register_at_fork(after_in_child=_forget_in_child)


def _take(path: Path, lake: Lake | None) -> _Instance:
    """An idle instance for ``path``: of its folder for a file, of its lake for a lake (an
    instance with a lake attached never serves a file, whose catalog queries see one database)."""
    folder = os.path.abspath(path.parent)
    key = lake.location if lake is not None else folder
    with _guard:
        for index in range(len(_idle) - 1, -1, -1):
            if _idle[index].folder == key:
                return _idle.pop(index)
    spill = os.path.join(folder, f"{SPILL_PREFIX}{os.getpid()}-{next(_spills)}")
    connection = duckdb.connect(":memory:")
    try:
        # TIMESTAMPTZ reads back as UTC, not the host's zone (once ICU is loaded: not in config).
        connection.execute("SET GLOBAL TimeZone = 'UTC'")
        connection.execute(f"SET temp_directory = {literal(spill)}")
        if threads := _threads():
            connection.execute(f"SET threads = {threads}")
    except BaseException:
        connection.close()
        raise
    return _Instance(connection, key, spill)


def _threads() -> int | None:
    try:
        return parse_duckdb_threads(os.environ.get(DUCKDB_THREADS_ENV))
    except ValueError:
        return None


def _give_back(instance: _Instance) -> None:
    if os.path.isdir(instance.spill):
        instance.close()  # it spilled: its folder goes with it, not kept for the next open
        with _guard:
            _spilled[0] += 1
        return
    with _guard:
        _idle.append(instance)
        longest_idle = _idle.pop(0) if len(_idle) > KEEP_IDLE else None
    if longest_idle is not None:
        longest_idle.close()


@contextmanager
def attached(
    path: Path,
    *,
    read_only: bool,
    memory_limit: str,
    storage_version: str = WAREHOUSE_STORAGE_VERSION,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection whose unqualified names are ``path``'s tables, for the block. DuckDB's own
    errors (a file that is not a database, a full disk) are raised as they come.
    ``storage_version``: the oldest DuckDB that must read a file created here (one that exists
    keeps its own: DuckDB would move it to this one at its next write)."""
    lake = lake_at(path)
    instance = _take(path, lake)
    alias = instance.lakes.get(lake.location) if lake is not None else None
    try:
        wanted = capped(memory_limit)
        if instance.limit != [wanted]:
            limit_memory(instance.connection, memory_limit)
            instance.limit[:] = [wanted]
        if lake is not None and alias is None:
            alias = f"lake_{next(_aliases)}"
            _attach_lake(instance.connection, lake, alias, read_only=read_only)
            instance.lakes[lake.location] = alias
        elif lake is None:
            alias = f"warehouse_{next(_aliases)}"
            options = ["READ_ONLY"] if read_only else []
            if not read_only and not path.exists():
                options.append(f"STORAGE_VERSION {literal(storage_version)}")
            mode = f" ({', '.join(options)})" if options else ""
            instance.connection.execute(f"ATTACH {literal(str(path))} AS {alias}{mode}")
    except BaseException:
        instance.close()
        raise
    assert alias is not None
    failed = True
    try:
        con = instance.connection.cursor()
        stack = _in_use.stack
        stack.append(instance)
        try:
            con.execute(f"USE {alias}")
            yield con
        except duckdb.OutOfMemoryException:
            in_force = _limit_in_force(instance.connection)
            raise _out_of_memory(path, memory_limit, in_force) from None
        finally:
            stack.remove(instance)
            con.close()
        failed = False
    finally:
        if lake is None:
            _detach(instance, alias, raise_errors=not failed)
        elif failed:
            instance.close()  # whatever the failure left behind goes with it
        else:
            _give_back(instance)


def _attach_lake(
    connection: duckdb.DuckDBPyConnection, lake: Lake, alias: str, *, read_only: bool
) -> None:
    """The lake under ``alias``, read-write whoever opens it first (the attachment is kept for
    the next opens, reads and writes alike); a writer creates it where it does not exist yet, a
    reader says in one line that there is nothing to read."""
    extensions.load(connection, s3=lake.on_s3)
    if lake.on_s3 and (secret := s3_secret_sql()) is not None:
        connection.execute(secret)
    try:
        connection.execute(lake.attach_sql(alias, create=False))
    except duckdb.Error as exc:
        if "does not exist" not in str(exc):
            raise cannot_open(lake.location, exc) from None
        if read_only:
            raise NoWarehouseYet(
                f"no warehouse at {lake.location} yet: run `creditlens sync` first"
            ) from None
        connection.execute(lake.attach_sql(alias, create=True))


def _detach(instance: _Instance, alias: str, *, raise_errors: bool) -> None:
    """Detaching closes the file (and releases DuckDB's lock on it); an instance that could not
    detach is closed instead, which closes the file all the same. Its error is raised unless
    the block already failed with one of its own."""
    try:
        instance.connection.execute(f"DETACH {alias}")
    except duckdb.Error:
        instance.close()
        if raise_errors:
            raise
        return
    _give_back(instance)
