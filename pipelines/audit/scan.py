"""Finding copies of the inventory's keys in files: plain, URL-encoded and base64.

Reports only where (file, line, column) and which key (by fingerprint): never the matching
text or the line around it, which would be the key again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipelines.api.redact import Needle
from pipelines.audit.inventory import Place
from pipelines.audit.report import ScanStats

DEFAULT_MAX_FILE_BYTES = 5 * 1024 * 1024
SKIP_DIRS = frozenset({".git", ".hg", ".svn"})
_BINARY_PROBE = 8192
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP_LIKE = re.compile(r"^[^/@\s]+@[^:/\s]+:")  # git@host:owner/repo


class ScanPathError(ValueError):
    """A path to scan does not exist: a scheduled check must not pass by scanning nothing."""


@dataclass(frozen=True)
class RawHit:
    key: str  # the inventory entry's name
    path: Path
    line: int
    column: int
    encoding: str


def check_roots(roots: Sequence[Path]) -> None:
    for root in roots:
        if not root.exists():
            raise ScanPathError(f"scan path {root} does not exist")


def scan(
    roots: Sequence[Path],
    needles: Mapping[str, Sequence[Needle]],
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> tuple[list[RawHit], ScanStats]:
    """Search every text file under ``roots`` for every needle of every key."""
    check_roots(roots)
    hits: list[RawHit] = []
    scanned = binary = large = unreadable = 0
    seen: set[Path] = set()
    for path in _files(roots):
        real = path.resolve()
        if real in seen:
            continue
        seen.add(real)
        try:
            if path.stat().st_size > max_file_bytes:
                large += 1
                continue
            data = path.read_bytes()
        except OSError:
            unreadable += 1
            continue
        if b"\0" in data[:_BINARY_PROBE]:
            binary += 1
            continue
        scanned += 1
        hits.extend(_search(path, data, needles))
    stats = ScanStats(
        roots=tuple(str(r) for r in roots),
        files_scanned=scanned,
        skipped_binary=binary,
        skipped_large=large,
        skipped_unreadable=unreadable,
        max_file_bytes=max_file_bytes,
    )
    return sorted(hits, key=lambda h: (str(h.path), h.line, h.column, h.key)), stats


def _files(roots: Sequence[Path]) -> Iterator[Path]:
    for root in roots:
        if root.is_file():
            yield root
            continue
        for folder, dirs, files in os.walk(root, followlinks=False):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(files):
                path = Path(folder) / name
                if path.is_file() and not path.is_symlink():
                    yield path


def _search(path: Path, data: bytes, needles: Mapping[str, Sequence[Needle]]) -> Iterator[RawHit]:
    for key, key_needles in needles.items():
        found: set[int] = set()
        for needle in key_needles:
            start = data.find(needle.value)
            while start != -1:
                if start not in found:
                    found.add(start)
                    line_start = data.rfind(b"\n", 0, start) + 1
                    yield RawHit(
                        key=key,
                        path=path,
                        line=data.count(b"\n", 0, start) + 1,
                        column=start - line_start + 1,
                        encoding=needle.encoding,
                    )
                start = data.find(needle.value, start + 1)


def place_covers(place: Place | str, path: Path, base_dir: Path) -> bool:
    """Whether an inventory place accounts for a file where the key was found.

    A place is free text, so it is read three ways: a path (relative to the inventory's
    folder) that is the file or one of its folders; a run of path components such as
    ``web/static/app.js`` or a repository folder name ``billing-service`` appearing in the
    file's path; or a repository address (``github.com/acme/web``, ``git@host:acme/web.git``)
    whose last component is one of the file's folders.
    """
    text = (place.place if isinstance(place, Place) else place).strip()
    if not text:
        return False
    target = path.resolve()
    remote = bool(_SCHEME.match(text) or _SCP_LIKE.match(text))
    if not remote:
        candidate = Path(text).expanduser()
        if not candidate.is_absolute():
            candidate = base_dir / candidate
        candidate = candidate.resolve()
        if candidate == target or candidate in target.parents:
            return True
        if text.startswith(("/", "~", "./", "../")):
            return False
    stripped = _SCP_LIKE.sub("", _SCHEME.sub("", text))
    parts = [p for p in stripped.replace("\\", "/").split("/") if p and p != "."]
    if not parts:
        return False
    if parts[-1].endswith(".git"):
        parts[-1] = parts[-1][: -len(".git")]
    hit_parts = target.parts
    n = len(parts)
    if any(list(hit_parts[i : i + n]) == parts for i in range(len(hit_parts) - n + 1)):
        return True
    host_like = remote or (len(parts) > 1 and "." in parts[0])
    return host_like and parts[-1] in hit_parts[:-1]
