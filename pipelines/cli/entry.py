"""The `creditlens` process: the console script and ``python -m pipelines.cli`` start here.

It runs the command (``pipelines.cli.main.main``, which the tests also run in their own process)
as the whole process: the command's own output and exit code, then no interpreter teardown after
its last line (pipelines/runtime/process_exit.py).
"""

from __future__ import annotations

from pipelines.cli.main import main
from pipelines.runtime.process_exit import leave


def run() -> None:
    leave(main)
