"""The read-only analyst copy, republished after each write.

Analysts open a copy, never the pipeline's file: DuckDB lets one process write a file or many
read it, and an analyst's open session must not block a sync. Copy beside, then rename: a reader
sees the old copy or the new one, never half.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pipelines.failpoints import failpoint
from pipelines.processes import process_alive
from pipelines.warehouse.connection import WarehouseError
from pipelines.warehouse.lock import file_lock


def default_analyst_copy(path: Path) -> Path:
    return path.with_name(f"{path.stem}.analyst{path.suffix or '.duckdb'}")


def publish_analyst_copy(path: Path, target: Path, lock_timeout_s: float) -> Path:
    if not path.exists():
        raise WarehouseError(f"no warehouse at {path} to publish")
    target.parent.mkdir(parents=True, exist_ok=True)
    _sweep_partials(target)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    with file_lock(path, exclusive=False, timeout_s=lock_timeout_s):
        shutil.copyfile(path, partial)
    with open(partial, "rb+") as handle:
        os.fsync(handle.fileno())
    failpoint("publish")
    os.replace(partial, target)
    _fsync_dir(target.parent)
    return target


def _sweep_partials(target: Path) -> None:
    """Removes partial copies left by a crash, never a live publisher's."""
    for stale in target.parent.glob(f".{target.name}.*.partial"):
        pid = stale.name.rsplit(".", 2)[-2]
        if not pid.isdigit() or not process_alive(int(pid)):
            stale.unlink(missing_ok=True)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
