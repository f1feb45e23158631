"""One writer at a time across processes.

DuckDB lets one process write a file or many read it, never both. Dagster's multiprocess
executor runs assets in separate processes, so every open of the warehouse goes through this
lock: exclusive to write, shared to read, held only for the transaction.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class WarehouseBusy(RuntimeError):
    pass


@contextmanager
def file_lock(path: Path, *, exclusive: bool, timeout_s: float = 600.0) -> Iterator[None]:
    lock_path = path.with_name(path.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise WarehouseBusy(
                        f"the warehouse {path} stayed locked by another sync for {timeout_s:g}s"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)
