"""A `creditlens` process ends when its command has, without the interpreter's teardown.

After the exit handlers, CPython tears the interpreter down: it clears every module and runs
full collections over every object the imports made (Dagster, SQLAlchemy, DuckDB, polars). That
is 0.6-0.8 CPU-s of a `creditlens sync` process on the machine this was measured on, a fifth of
a small company's first sync, all of it after the command's last line.

Nothing of a command is left to that teardown. The blocks that write files close them; every
open of the warehouse detaches it when it ends (the idle DuckDB instances kept for reuse hold no
file); what must happen at exit is an exit handler (logging's flush, Python's temporary folders,
the empty templates' folder). So when the command is over, the process does what the interpreter
does before its teardown, in its order: it waits for no thread (it leaves only where no
non-daemon thread is left to join), runs every exit handler once, flushes its standard streams,
then leaves with the command's exit code (``os._exit``).

Where that is not sure, the interpreter exits as usual: the command ended in anything but its
exit code (a traceback), a thread is still running, a standard stream cannot be flushed, or the
interpreter has no ``atexit._run_exitfuncs`` (CPython's, used by its own test suite).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable

__all__ = ["leave"]


def leave(command: Callable[[], object]) -> None:
    """Runs ``command``, which ends by ``sys.exit(code)``, as the whole of this process."""
    try:
        command()
    except SystemExit as done:
        if isinstance(done.code, int | None) and _only_this_thread_left():
            _finish(done.code or 0)
        raise


def _only_this_thread_left() -> bool:
    this = threading.current_thread()
    return all(t is this or t.daemon for t in threading.enumerate())


def _finish(code: int) -> None:
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is None:
        return
    run_exit_handlers()  # each once, last registered first; none is left for the interpreter
    try:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is not None and not stream.closed:
                stream.flush()
    except (OSError, ValueError):
        return  # the interpreter reports it as it exits, as it would have
    os._exit(code)
