"""A `creditlens` process ends when its command has: every exit handler once, its output whole,
its exit code, and no interpreter teardown after (pipelines/runtime/process_exit.py).

What proves the teardown skipped is a witness planted in each child by a ``sitecustomize``: an
object whose finalizer writes a line when the interpreter tears down and frees it, beside an exit
handler registered before anything of creditlens is imported (as coverage's start-up hook is).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.reliability.support import assert_one_clear_error_line

ROOT = Path(__file__).resolve().parents[2]

WITNESS = """
import atexit, builtins, os

class Witness:
    def __del__(self):
        os.write(2, b"torn down\\n")

builtins._creditlens_witness = Witness()
atexit.register(lambda: os.write(2, b"exit handler\\n"))
"""


@pytest.fixture
def witnessed(tmp_path: Path) -> dict[str, str]:
    """The environment of a child that carries the witness."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(WITNESS)
    path = os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_the_witness_sees_an_ordinary_teardown(witnessed: dict[str, str]) -> None:
    done = _run(witnessed, "-c", "print('done')")
    assert done.stdout == "done\n"
    assert done.stderr == "exit handler\ntorn down\n"


def test_a_command_ends_with_its_output_its_code_and_no_teardown(
    witnessed: dict[str, str], tmp_path: Path
) -> None:
    helped = _run(witnessed, "-m", "pipelines.cli", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "sync" in helped.stdout and helped.stdout.rstrip().endswith("╯")  # all of it
    assert helped.stderr == "exit handler\n"

    env = {**witnessed, "CREDITLENS_WAREHOUSE": str(tmp_path / "never-synced.duckdb")}
    failed = _run(env, "-m", "pipelines.cli", "breaks", "list")
    assert failed.returncode == 1
    assert failed.stderr.endswith("exit handler\n")
    failed.stderr = failed.stderr.removesuffix("exit handler\n")
    assert_one_clear_error_line(failed, "never-synced.duckdb")

    usage = _run(witnessed, "-m", "pipelines.cli", "sync", "--bogus")
    assert usage.returncode == 2
    assert usage.stderr.endswith("exit handler\n") and "torn down" not in usage.stderr


LEAVE = """
import sys, threading, time
from pathlib import Path
from pipelines.runtime.process_exit import leave

def late() -> None:
    time.sleep(0.3)
    Path(sys.argv[1]).write_text("joined")

if sys.argv[2] == "thread":
    threading.Thread(target=late).start()

def command() -> None:
    print("output")
    if sys.argv[2] == "traceback":
        raise RuntimeError("a bug")
    sys.exit(3)

leave(command)
"""


@pytest.mark.parametrize("ending", ["thread", "traceback"])
def test_the_interpreter_exits_as_usual_where_leaving_is_not_sure(
    witnessed: dict[str, str], tmp_path: Path, ending: str
) -> None:
    """A thread still running is joined first; a command that raised is reported as Python
    reports it. Both then tear down as any process does."""
    marker = tmp_path / "marker"
    done = _run(witnessed, "-c", LEAVE, str(marker), ending)
    assert done.stdout == "output\n"
    assert done.stderr.endswith("exit handler\ntorn down\n")
    if ending == "thread":
        assert done.returncode == 3
        assert marker.read_text() == "joined"
    else:
        assert done.returncode == 1
        assert "RuntimeError: a bug" in done.stderr


def test_both_ways_of_starting_creditlens_end_this_way() -> None:
    """The console script and ``python -m pipelines.cli`` start at the same entry point."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["creditlens"] == "pipelines.cli.entry:run"
    main_module = (ROOT / "pipelines" / "cli" / "__main__.py").read_text()
    assert "from pipelines.cli.entry import run" in main_module
