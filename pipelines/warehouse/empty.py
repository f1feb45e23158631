"""New DuckDB files start as copies of empty ones built once per process: the warehouse of the
current schema, and the analyst copy's views file of a catalog (analyst_views.py).

Creating the schema from nothing is some 700 statements, most of them column comments, each a
catalog change in DuckDB: about 0.2 CPU-s, a sixth of a small first sync, paid again for every new
warehouse a process creates (an agency trying accounts one warehouse each, the benchmarks, the
tests). Copying a file DuckDB wrote and closed is a few milliseconds, and gives the same catalog:
the caller then stamps the schema's history with the time the copy became a warehouse.

The template lives in a private folder of the process that built it and is removed when that
process exits; a forked child builds its own (the parent may remove its folder at any time).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["copy_of_empty", "template"]

_guard = threading.Lock()
_templates: dict[str, Path] = {}
_folder: list[Path] = []


def _forget_in_child() -> None:
    global _guard
    _guard = threading.Lock()
    _templates.clear()
    _folder.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def _remove(folder: Path, owner: int) -> None:
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


def template(key: str, build: Callable[[Path], None]) -> Path:
    """The process's file for ``key`` (a name safe in a file name), which ``build`` creates at
    the path it is given the first time; read it, never write it."""
    with _guard:
        if key not in _templates:
            if not _folder:
                folder = Path(tempfile.mkdtemp(prefix="creditlens-empty-"))
                atexit.register(_remove, folder, os.getpid())
                _folder.append(folder)
            path = _folder[0] / f"{key}.duckdb"
            path.unlink(missing_ok=True)  # what a build that failed left
            build(path)
            _templates[key] = path
        return _templates[key]


def copy_of_empty(path: Path, key: str, build: Callable[[Path], None]) -> bool:
    """Makes ``path`` (which must not exist, nor its DuckDB log) a copy of the ``template`` of
    ``key``; False, doing nothing, where ``path`` or its log exists. Copied under another name
    and renamed: a copy cut short (a full disk, a kill) is never taken for a warehouse."""
    if path.exists() or path.with_name(path.name + ".wal").exists():
        return False
    empty = template(key, build)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        shutil.copyfile(empty, partial)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return True
