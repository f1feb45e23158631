"""A full disk, said as one line: where, how much is free, and what it changed.

A disk fills where a sync writes: the staging folder, DuckDB's log at COMMIT, the checkpoint, the
analyst copy. Each library says so its own way (``OSError`` errno 28, DuckDB's "TransactionContext
Error: Failed to commit: ... No space left on device", polars' "(os error 28)"), and each used to
reach the terminal as a traceback of 25 lines. What a user needs is which disk, how much room is
left on it, and whether the warehouse changed, so these are recognised by errno or, when a library
kept only the text, by the operating system's own words for it.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from pipelines.warehouse.errors import WarehouseError

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# How DuckDB and polars (Rust) quote the OS once the errno itself is gone.
_FULL_TEXTS = ("no space left on device", "os error 28", "disk quota exceeded", "os error 122")


class DiskFull(WarehouseError):
    """The disk a sync writes to filled up; the message says where, how full and what changed."""


def is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return True
    text = str(exc).lower()
    return any(words in text for words in _FULL_TEXTS)


def free_bytes(path: Path) -> int | None:
    """Bytes free to us on the file system holding ``path`` (its nearest existing folder)."""
    folder = path
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def size_text(n: int | None) -> str:
    """Bytes as a person reads them: 0 B, 512 KB, 3.4 MB, 1.2 GB (powers of 1024)."""
    if n is None:
        return "an unknown amount"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if unit in ("B", "KB") else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # unreachable: the loop returns at TB


def disk_full(where: Path, outcome: str) -> DiskFull:
    """``where``: the file or folder whose write failed; ``outcome``: what the failed write
    left, e.g. "nothing was changed"."""
    return DiskFull(
        f"the disk holding {where} is full ({size_text(free_bytes(where))} free): {outcome}; "
        "free some space there, then sync again"
    )
