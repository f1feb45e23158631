"""A process's start-up imports, loaded with the cyclic garbage collector paused.

A command's imports (Dagster, SQLAlchemy, DuckDB, polars, pydantic) allocate hundreds of thousands
of objects that live as long as the process. While they load, the collector keeps running full
collections over all of them and finds nothing: a fifth of a `creditlens sync` process's start-up
(2.0 → 1.6 CPU-s for its imports on the machine this was measured on). Frozen afterwards
(``gc.freeze``), they are also left out of every collection for the rest of the run.

Only the first start-up of a process is frozen. Anything frozen is never collected, so freezing
again later, in a process that has been working (a test process running commands in itself),
could keep garbage of that work for good, a connection held open by a cycle among it.

At exit they are unfrozen, so the interpreter's last collection frees them as it would have:
DuckDB's bindings report every object of theirs still alive then as leaked, on stderr. (A
`creditlens` process whose command is over skips that teardown: pipelines/runtime/process_exit.py.)
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Whether this process's start-up is frozen, so the interpreter is asked only until it is:
# CPython 3.11's ``gc.get_freeze_count`` walks every frozen object (30 ms in a test process that
# runs commands in itself, 2% of its time when asked at each command).
_frozen = [False]


@contextmanager
def imports_without_gc() -> Iterator[None]:
    """Around a command's own imports, before it does any work."""
    if _frozen[0] or gc.get_freeze_count():
        _frozen[0] = True
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        _frozen[0] = True
        atexit.register(gc.unfreeze)
        if enabled:
            gc.enable()
