"""Which scanned root holds a file the scan found, and the file's path inside it.

A hit's path is its root joined with the path below it (``--scan web`` gives ``web/static/a.js``,
an absolute root an absolute path). Reports and rules speak of the path below the root: SARIF
locations are relative to it (a log is portable to another checkout), and whether a browser is
served a file is judged from the folders inside the scanned tree, never from the folders above it
(a checkout under ``/home/me/build/`` is not a build output).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath


def below_root(path: str, roots: Sequence[str]) -> tuple[int, str] | None:
    """(index of the first root holding ``path``, the path below it in POSIX form), or None when
    no root holds it. A root that is the file itself holds it as its own name."""
    target = PurePath(path)
    for index, root in enumerate(roots):
        base = PurePath(root)
        if target == base:
            return index, target.name
        if target.is_relative_to(base):
            return index, target.relative_to(base).as_posix()
    return None


def inside_path(path: str, roots: Sequence[str]) -> str:
    """The path below its scanned root, or the path as found when no root holds it."""
    found = below_root(path, roots)
    return found[1] if found else PurePath(path).as_posix()
