"""The read-only analyst copy, republished after each write.

Analysts open a copy, never the pipeline's file: DuckDB lets one process write a file or many
read it, and an analyst's open session must not block a sync. Copy beside, then rename: a reader
sees the old copy or the new one, never half.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from pipelines.runtime.failpoints import failpoint
from pipelines.runtime.processes import process_alive
from pipelines.warehouse.disk import DiskFull, free_bytes, size_text
from pipelines.warehouse.errors import WarehouseError
from pipelines.warehouse.lock import file_lock


def default_analyst_copy(path: Path) -> Path:
    return path.with_name(f"{path.stem}.analyst{path.suffix or '.duckdb'}")


def publish_analyst_copy(path: Path, target: Path, lock_timeout_s: float) -> Path:
    if not path.exists():
        raise WarehouseError(f"no warehouse at {path} to publish")
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _sweep_partials(target)
        _check_room(path, target)
        _copy_then_rename(path, partial, target, lock_timeout_s)
    except OSError as exc:
        raise WarehouseError(_failure(target, partial, exc)) from None
    return target


def _check_room(path: Path, target: Path) -> None:
    """Refuse before writing a byte when the copy cannot fit: the new copy is written whole
    beside the old one, so its folder needs free space the size of the warehouse file. Found out
    by the copy instead, it is a disk filled to the last byte under everyone else on it."""
    needed = path.stat().st_size
    free = free_bytes(target.parent)
    if free is not None and free < needed:
        raise DiskFull(
            f"cannot publish the analyst copy {target}: it needs {size_text(needed)} free "
            f"and {target.parent} has {size_text(free)} free; the warehouse itself is written, "
            "and the previous analyst copy stays until there is room"
        )


def _copy_then_rename(path: Path, partial: Path, target: Path, lock_timeout_s: float) -> None:
    """Whatever stops the copy (a full disk, an interrupt) removes its partial file at once.

    Left for the next sync's sweep, a partial copy as large as the warehouse holds the space it
    ran out of, and a disk that is full stays full: the next sync fails before it publishes.
    """
    try:
        with file_lock(path, exclusive=False, timeout_s=lock_timeout_s):
            shutil.copyfile(path, partial)
        with open(partial, "rb+") as handle:
            os.fsync(handle.fileno())
        failpoint("publish")
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def _failure(target: Path, partial: Path, exc: OSError) -> str:
    """One line naming the file: an OSError raised on a descriptor (a write that found the disk
    full) names none, and ``[Errno 28] No space left on device`` alone says not where."""
    where = exc.filename if exc.filename is not None else partial
    reason = exc.strerror or str(exc) or type(exc).__name__
    code = f" [Errno {exc.errno}]" if exc.errno is not None else ""
    line = f"cannot publish the analyst copy {target}: {reason}{code} at {where}"
    return line.replace("\r", "\\r").replace("\n", "\\n")  # one line whatever a path holds


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
