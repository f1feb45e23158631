"""Finding copies of the inventory's keys in files: plain, URL-encoded and base64.

Reports only where (file, line, column) and which key (by fingerprint): never the matching
text or the line around it, which would be the key again.

Nothing is skipped silently: every file or folder the scan passes over (binary, too large,
unreadable, special, a symlink, a key too short to search for) is counted in ``ScanStats``,
and the unreadable ones are listed, because a scan that quietly reads less than it was given
would report a clean tree it never saw.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from pipelines.api.redact import Needle
from pipelines.audit.inventory import Place
from pipelines.audit.report import ScanStats

DEFAULT_MAX_FILE_BYTES = 5 * 1024 * 1024
SKIP_DIRS = frozenset({".git", ".hg", ".svn"})
# A key shorter than this is not searched for: a 2-character key matches inside `desk1`,
# `bank1`, `task1`, so its hits would be noise, not evidence. 16 characters (at least 96 bits
# in any key alphabet worth the name) are also the least a key should have anyway.
MIN_SCAN_KEY_CHARS = 16
# A line holding this marker is an accepted copy (a test fixture, a documented example): its
# hits are kept as suppressed, counted, and never become findings.
ALLOW_MARKER = b"creditlens:allow"
# How many unreadable files (and folders) ScanStats lists by path; the counts stay exact.
MAX_LISTED_PATHS = 100
BINARY_PROBE_BYTES = 8192  # a NUL byte in this many first bytes means binary
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP_LIKE = re.compile(r"^[^/@\s]+@[^:/\s]+:")  # git@host:owner/repo
# O_NONBLOCK: a regular file swapped for a FIFO between listing and opening must not hang us.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class ScanPathError(ValueError):
    """A path to scan does not exist: a scheduled check must not pass by scanning nothing."""


@dataclass(frozen=True)
class RawHit:
    key: str  # the inventory entry's name
    path: Path
    line: int
    column: int
    encoding: str
    suppressed: bool = False  # on a line marked creditlens:allow
    commit: str | None = None  # git history scans: see pipelines/audit/git_scan.py


class Skip(StrEnum):
    """Why the scan passed over a file it was given: each reason is a count of its own."""

    BINARY = "binary"
    LARGE = "large"
    SPECIAL = "special"
    SYMLINK = "symlink"


@dataclass
class Capped:
    """An exact count and the first MAX_LISTED_PATHS paths behind it: a tree of unreadable
    files must not make the report as large as the tree."""

    count: int = 0
    paths: list[str] = field(default_factory=list)

    def add(self, path: Path | str) -> None:
        self.count += 1
        if len(self.paths) < MAX_LISTED_PATHS:
            self.paths.append(str(path))


@dataclass
class Tally:
    """What a scan read and passed over, accumulated while it runs (shared with the git scan)."""

    scanned: int = 0
    suppressed: int = 0
    skipped: Counter[Skip] = field(default_factory=Counter)
    unreadable_files: Capped = field(default_factory=Capped)
    unreadable_dirs: Capped = field(default_factory=Capped)

    def stats(
        self,
        roots: Sequence[Path | str],
        max_file_bytes: int,
        short_keys: Sequence[str],
        commits: int = 0,
    ) -> ScanStats:
        return ScanStats(
            roots=tuple(str(r) for r in roots),
            files_scanned=self.scanned,
            skipped_binary=self.skipped[Skip.BINARY],
            skipped_large=self.skipped[Skip.LARGE],
            skipped_unreadable=self.unreadable_files.count,
            max_file_bytes=max_file_bytes,
            skipped_special=self.skipped[Skip.SPECIAL],
            skipped_symlinks=self.skipped[Skip.SYMLINK],
            skipped_unreadable_dirs=self.unreadable_dirs.count,
            unreadable_files=tuple(self.unreadable_files.paths),
            unreadable_dirs=tuple(self.unreadable_dirs.paths),
            short_keys=tuple(short_keys),
            min_key_chars=MIN_SCAN_KEY_CHARS,
            suppressed=self.suppressed,
            commits_scanned=commits,
        )


def check_roots(roots: Sequence[Path]) -> None:
    """Refuse a path to scan that does not exist, is a symlink loop, or cannot be read at all.

    Each was named by someone who expects it scanned: a scan that read nothing of it must not
    pass as a clean one (a scheduled check would go green on a tree it never saw). What cannot
    be read further down is a different matter: the scan goes on, and counts and lists it (a
    finding). A folder is read at all when it can be both listed and entered (a folder with
    read but no search permission lists names whose files cannot be opened).
    """
    for root in roots:
        try:
            st = os.stat(root)
            if stat.S_ISDIR(st.st_mode):
                with os.scandir(root):
                    pass
                os.stat(os.path.join(root, "."))  # needs search (x) permission on the folder
            elif stat.S_ISREG(st.st_mode):
                os.close(os.open(root, _OPEN_FLAGS))
        except (FileNotFoundError, NotADirectoryError):
            raise ScanPathError(f"scan path {root} does not exist") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                reason = "is a symlink loop (it never reaches a file or folder)"
            else:
                reason = f"cannot be read ({exc.strerror or exc})"
            raise ScanPathError(
                f"scan path {root} {reason}: nothing of it would be scanned"
            ) from None


def split_short(
    needles: Mapping[str, Sequence[Needle]],
) -> tuple[dict[str, Sequence[Needle]], tuple[str, ...]]:
    """The keys long enough to search for, and the names of those that are not.

    The key's length is read from its plain spelling (the key's own UTF-8 bytes), so the scan
    never needs the key itself.
    """
    usable: dict[str, Sequence[Needle]] = {}
    short: list[str] = []
    for key, key_needles in needles.items():
        plain = next((n.value for n in key_needles if n.encoding == "plain"), None)
        chars = len(plain.decode("utf-8", errors="replace")) if plain is not None else None
        if chars is not None and chars < MIN_SCAN_KEY_CHARS:
            short.append(key)
        else:
            usable[key] = key_needles
    return usable, tuple(short)


def scan(
    roots: Sequence[Path],
    needles: Mapping[str, Sequence[Needle]],
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> tuple[list[RawHit], ScanStats]:
    """Search every text file under ``roots`` for every needle of every long-enough key.

    Folders are walked with an explicit stack (os.walk recursed on Python 3.11 and a deep
    tree ended in RecursionError), in name order, without following symlinks; a root named
    explicitly is followed even if it is a symlink, since someone asked for it.
    """
    check_roots(roots)
    usable, short = split_short(needles)
    tally = Tally()
    hits: list[RawHit] = []
    seen: set[tuple[int, int]] = set()
    for path, follow in _files(roots, tally):
        data = _read(path, follow, max_file_bytes, tally, seen)
        if data is None:
            continue
        hits.extend(search(path, data, usable, tally))
    return sort_hits(hits), tally.stats(roots, max_file_bytes, short)


def sort_hits(hits: list[RawHit]) -> list[RawHit]:
    return sorted(hits, key=lambda h: (str(h.path), h.line, h.column, h.key, h.commit or ""))


def _files(roots: Sequence[Path], tally: Tally) -> Iterator[tuple[Path, bool]]:
    """(path, whether to follow a symlink when opening it) of every regular file to read."""
    for root in roots:
        try:
            st = root.stat()
        except OSError:
            tally.unreadable_files.add(root)
            continue
        if stat.S_ISREG(st.st_mode):
            yield root, True
        elif stat.S_ISDIR(st.st_mode):
            yield from _walk(root, tally)
        else:
            tally.skipped[Skip.SPECIAL] += 1


def _walk(root: Path, tally: Tally) -> Iterator[tuple[Path, bool]]:
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            tally.unreadable_dirs.add(folder)
            continue
        subfolders: list[Path] = []
        for entry in entries:
            path = folder / entry.name
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except PermissionError:
                # Listed but not searchable (read without execute permission): the folder is
                # what cannot be read, counted once as a folder, not as each name it lists.
                tally.unreadable_dirs.add(folder)
                break
            except OSError:
                tally.unreadable_files.add(path)
                continue
            if stat.S_ISLNK(mode):
                tally.skipped[Skip.SYMLINK] += 1
            elif stat.S_ISDIR(mode):
                if entry.name not in SKIP_DIRS:
                    subfolders.append(path)
            elif stat.S_ISREG(mode):
                yield path, False
            else:  # FIFO, socket, device: never opened
                tally.skipped[Skip.SPECIAL] += 1
        stack.extend(reversed(subfolders))  # the first name is walked first


def _read(
    path: Path, follow: bool, max_file_bytes: int, tally: Tally, seen: set[tuple[int, int]]
) -> bytes | None:
    """The file's bytes, or None after counting why not (each file is read once)."""
    flags = _OPEN_FLAGS if follow else _OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        tally.unreadable_files.add(path)
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):  # swapped since it was listed
                tally.skipped[Skip.SPECIAL] += 1
                return None
            if (st.st_dev, st.st_ino) in seen:  # a hard link, or overlapping roots
                return None
            seen.add((st.st_dev, st.st_ino))
            if st.st_size > max_file_bytes:
                tally.skipped[Skip.LARGE] += 1
                return None
            data = handle.read(max_file_bytes + 1)
        except OSError:
            tally.unreadable_files.add(path)
            return None
    return admit(data, max_file_bytes, tally)  # over the limit only if it grew since fstat


def admit(data: bytes, max_file_bytes: int, tally: Tally) -> bytes | None:
    """``data`` if it is to be searched, counted as scanned; None after counting why not (over
    ``max_file_bytes``, or binary: a NUL byte near the start)."""
    if len(data) > max_file_bytes:
        tally.skipped[Skip.LARGE] += 1
        return None
    if b"\0" in data[:BINARY_PROBE_BYTES]:
        tally.skipped[Skip.BINARY] += 1
        return None
    tally.scanned += 1
    return data


def search(
    path: Path,
    data: bytes,
    needles: Mapping[str, Sequence[Needle]],
    tally: Tally,
    commit: str | None = None,
) -> Iterator[RawHit]:
    """Every place in ``data`` where a spelling of a key starts (one hit per offset)."""
    for key, key_needles in needles.items():
        found: set[int] = set()
        for needle in key_needles:
            start = data.find(needle.value)
            while start != -1:
                if start not in found:
                    found.add(start)
                    line_start = data.rfind(b"\n", 0, start) + 1
                    line_end = data.find(b"\n", start)
                    line = data[line_start : line_end if line_end != -1 else len(data)]
                    suppressed = ALLOW_MARKER in line
                    tally.suppressed += suppressed
                    yield RawHit(
                        key=key,
                        path=path,
                        line=data.count(b"\n", 0, start) + 1,
                        column=start - line_start + 1,
                        encoding=needle.encoding,
                        suppressed=suppressed,
                        commit=commit,
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
