"""Reading a warehouse back, for comparisons with the simulator's ground truth."""

from __future__ import annotations

import contextlib
import io
import itertools
import locale
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pytest

from pipelines.warehouse.sql_text import literal
from tests.conftest import Simulated, sync_into

if TYPE_CHECKING:
    from pipelines.cli.sync_report import SyncReport

__all__ = [
    "cli",
    "cli_in_process",
    "copy_folder",
    "landed",
    "sync_into",
    "sync_reports",
    "table",
    "truth",
]

LEDGER_COLUMNS = (
    "strftime(created_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%g') || 'Z', entry_type, amount, "
    "description, has_description, channel, agent_id, campaign_id, balance_after"
)


# One in-memory DuckDB per process that attaches each file read-only for one query: a new
# database instance per read (duckdb.connect(file)) cost 11 to 13 ms against 2.6 ms, and the
# suite's tests read back hundreds of times. Forgotten, not closed, in a forked child. Not the
# warehouse's own pool (pipelines/warehouse/instances.py): a read-back checks the product, so it
# shares none of its state (idle instances, memory limits) with what it checks.
_reader: list[duckdb.DuckDBPyConnection] = []
_aliases = itertools.count()
os.register_at_fork(after_in_child=_reader.clear)


def _read(path: Path, sql: str, parameters: list[Any] | None = None) -> list[tuple]:
    """``sql``'s rows over ``path``'s tables, the file opened read-only for this query alone."""
    if not _reader:
        _reader.append(duckdb.connect(":memory:"))
    con = _reader[0].cursor()
    alias = f"read_{next(_aliases)}"
    try:
        con.execute(f"ATTACH {literal(str(path))} AS {alias} (READ_ONLY)")
        try:
            con.execute(f"USE {alias}")
            return con.execute(sql, parameters or []).fetchall()
        finally:
            con.execute("USE memory")
            con.execute(f"DETACH {alias}")
    finally:
        con.close()


def landed(path: Path, account: str | None = None) -> list[tuple]:
    where = "WHERE account = ?" if account else ""
    sql = f"SELECT {LEDGER_COLUMNS} FROM ledger_entries {where}"
    return sorted(_read(path, sql, [account] if account else None))


def truth(s: Simulated) -> list[tuple]:
    return sorted(
        (
            e["createdAtText"],
            e["type"],
            Decimal(e["amount"]),
            e["description"],
            e["hasDescription"],
            e["channel"],
            e["agentId"],
            e["campaignId"],
            Decimal(e["balanceAfter"]),
        )
        for e in s.sim.truth(s.company).entries
    )


def table(path: Path, sql: str) -> list[tuple]:
    return _read(path, sql)


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Runs `creditlens ...` in a child process, the way a user or a scheduler would."""
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli_in_process(
    *args: str,
    env: dict[str, str] | None = None,
    inherit: bool = True,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess:
    """Runs `creditlens ...` through the command's own entry point (``pipelines.cli.main.main``,
    all ``python -m pipelines.cli`` does) in this process: the same parsing, output and exit code
    as ``cli``, without a fresh interpreter's seconds of imports. For what a command does; a test
    of the process itself (a kill, what reaches a terminal first) keeps a real process.

    ``env`` is added to this process's environment, or with ``inherit=False`` replaces it, as
    ``subprocess.run(env=...)`` would; both, and the working directory, are restored after."""
    from pipelines.cli.main import main

    saved_env, saved_argv, saved_cwd = dict(os.environ), sys.argv, Path.cwd()
    root = logging.getLogger()  # main() calls logging.basicConfig: undone after
    saved_logging = (root.level, list(root.handlers))
    # Streams that encode as a child's pipes do: stdout strictly, stderr with backslashreplace
    # (Python's own choices), so text a terminal cannot take fails here as it would there.
    encoding = locale.getpreferredencoding(False)
    out = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="strict", newline="\n")
    err = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="backslashreplace", newline="\n")
    if not inherit:
        os.environ.clear()
    os.environ.update(env or {})
    sys.argv = ["creditlens", *args]
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        root.setLevel(saved_logging[0])
        root.handlers[:] = saved_logging[1]
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode(encoding))  # type: ignore[attr-defined]
    return subprocess.CompletedProcess(["creditlens", *args], code, *texts)


@contextlib.contextmanager
def sync_reports() -> Iterator[list[SyncReport]]:
    """The reports of the syncs a command runs inside the block, read as they are returned: the
    command runs as it always does, and a test reads both what it said and what it recorded of
    the same sync."""
    from pipelines.cli import sync_command  # Dagster: only for the tests that sync

    reports: list[SyncReport] = []
    real = sync_command.run_sync

    def spy(*args: Any, **kwargs: Any) -> SyncReport:
        reports.append(real(*args, **kwargs))
        return reports[-1]

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(sync_command, "run_sync", spy)
        yield reports


def copy_folder(source: Path, target: Path) -> None:
    """A test's own copy of a shared synced folder (warehouse, analyst copy, Dagster instance),
    laid out as ``creditlens_variables`` expects under ``target``, for a test that writes."""
    shutil.copytree(source, target, dirs_exist_ok=True)
