"""A benchmark's ``main`` run in the test's process, for a smoke that reads what it prints.

The same parsing, output and exit code as `python -m benchmarks.NAME`, without a fresh
interpreter's seconds of imports (Dagster's above all), where the process around the benchmark
proves nothing the smoke reads: the children a benchmark measures stay children. What ``main``
changes of this process is undone after it: the environment (a benchmark exports its settings
for its children, or for the sync it runs in process), ``sys.argv`` and the root logger (a sync
run through the CLI configures it).

The children read compiled bytecode from the cache the whole suite uses (tests/conftest.py).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def run_main(
    main: Callable[[list[str]], object],
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    *,
    env: Mapping[str, str] | None = None,
) -> Ran:
    """``main(argv)`` as its process would end: its return value, or the code it exits with (a
    message given to SystemExit is printed to stderr, as the interpreter would, and means 1).
    ``env``: the whole environment it runs in, as ``subprocess.run(env=...)`` gives a child."""
    saved_env, saved_argv = dict(os.environ), sys.argv
    root = logging.getLogger()
    saved_logging = (root.level, list(root.handlers))
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        try:
            returned = main(argv)
            code = returned if isinstance(returned, int) else 0
        except SystemExit as exit_:
            if isinstance(exit_.code, int) or exit_.code is None:
                code = exit_.code or 0
            else:
                print(exit_.code, file=sys.stderr)
                code = 1
    finally:
        root.setLevel(saved_logging[0])
        root.handlers[:] = saved_logging[1]
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)
