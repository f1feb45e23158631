"""Alembic's revision scripts of Dagster's storages, read once per process instead of each time.

Every Dagster storage database that is created or opened asks alembic for the head revision of
its schema (an in-memory instance stamps its two databases; a SQLite folder checks each one it
opens), and alembic answers by executing all of the storage's ~90 revision scripts again: 35 ms
a question, two or more per sync, 14 of the test suite's 310 worker CPU-s (sampled). The scripts
are files of the installed Dagster, the same for the life of a process, so the object that reads
them (alembic's ``ScriptDirectory``, which keeps what it read) is kept per script folder and
ini file. Everything else is alembic's and Dagster's as they are: the revision stamped or
checked, the SQL, the locks.
"""

from __future__ import annotations

import atexit
import threading
from typing import Any

from alembic.config import Config
from alembic.script import ScriptDirectory

__all__ = ["read_revision_scripts_once"]

_scripts: dict[tuple[str | None, str | None], ScriptDirectory] = {}
_guard = threading.Lock()
_original: Any = ScriptDirectory.__dict__["from_config"]


def _from_config(cls: type[ScriptDirectory], config: Config) -> ScriptDirectory:
    if cls is not ScriptDirectory:
        return _original.__func__(cls, config)
    key = (config.config_file_name, config.get_alembic_option("script_location"))
    with _guard:
        script = _scripts.get(key)
        if script is None:
            script = _scripts[key] = _original.__func__(cls, config)
        return script


# Released at exit, before modules are torn down: kept to the end, the revision modules they hold
# changed the order of teardown so that a failed `creditlens sync` ended with nanobind listing
# DuckDB objects as leaked on stderr, after its one error line (tests/reliability/test_faults.py).
atexit.register(_scripts.clear)


def read_revision_scripts_once() -> None:
    """Installs the cache (idempotent): by the modules that build the CLI's instances, before
    any storage is created."""
    if ScriptDirectory.__dict__["from_config"] is _original:
        ScriptDirectory.from_config = classmethod(_from_config)  # type: ignore[method-assign,assignment]
