"""A command's imports load with the collector paused, are frozen once, and are freed at exit.

Each check needs an interpreter of its own: the freeze happens once per process, and this one
froze its collection's imports already (tests/conftest.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.pipeline.helpers import cli
from tests.reliability.support import assert_one_clear_error_line

PROCESS = """
import gc
from pipelines.runtime.startup import imports_without_gc

with imports_without_gc():
    assert not gc.isenabled()
    import duckdb
    cycle = [duckdb.connect()]
    cycle.append(cycle)
assert gc.isenabled() and gc.get_freeze_count() > 0
frozen = gc.get_freeze_count()

garbage = [object()]
garbage.append(garbage)
with imports_without_gc():  # a process that has been working is never frozen again
    assert gc.isenabled()
assert gc.get_freeze_count() == frozen
print("ok")
"""


def test_imports_are_frozen_once_and_the_collector_runs_again_after() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROCESS], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"
    # Unfrozen at exit, DuckDB's objects held in the frozen cycle are freed by the last
    # collection: its bindings print a "leaked" report for any that are not.
    assert done.stderr == ""


def test_a_command_that_fails_prints_its_one_line_and_nothing_after(tmp_path: Path) -> None:
    """A real `creditlens` process: the freeze of its imports leaves nothing on stderr at exit
    but the command's own error line."""
    missing = tmp_path / "never-synced.duckdb"
    done = cli("breaks", "list", env={"CREDITLENS_WAREHOUSE": str(missing)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert_one_clear_error_line(done)  # its last line: a leak report after it would be last
