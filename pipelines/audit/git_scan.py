"""Finding copies of the keys in a git repository's history, not only in its working tree.

A key deleted from the tip is still in every clone of the repository: the commit that added it
ships it to whoever fetches. So the history is a place the key lies, and this scan reads every
file version (blob) reachable from any ref (branches, tags, remotes, stash: ``git rev-list
--all``), each distinct blob once, with the same searches as the file scan.

Each hit names the blob's path and one commit: the **oldest** commit, in topological order
(``git rev-list --all --topo-order --reverse``: parents before children), whose tree holds
that blob at that path. On a linear history that is the commit that introduced that version of
the file, where a clean-up starts. Hit paths are the repository's top folder joined with the
path inside the tree, so inventory places cover them as they cover working-tree files.

Trees are read through one ``git cat-file --batch`` process, and a subtree already read at the
same path is not read again, so the work grows with what changed, not with commits x files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from pipelines.api.redact import Needle
from pipelines.audit.report import ScanStats
from pipelines.audit.scan import (
    DEFAULT_MAX_FILE_BYTES,
    RawHit,
    ScanPathError,
    Skip,
    Tally,
    admit,
    search,
    sort_hits,
    split_short,
)

_TREE = b"40000"  # a tree entry's mode, as git writes it inside tree objects
_GITLINK = b"160000"  # a submodule's commit: not in this repository's objects


class GitScanError(ScanPathError):
    """The history of a path cannot be scanned (no git, not a repository, a git failure).

    A ScanPathError, so callers that stop on a bad --scan path stop on this one too.
    """


def scan_git(
    repo: Path | str,
    needles: Mapping[str, Sequence[Needle]],
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> tuple[list[RawHit], ScanStats]:
    """Search every blob reachable from every ref of the repository at ``repo``.

    Hits carry ``commit`` (see the module's docstring for which one). Raises GitScanError
    with a one-line message naming ``repo`` when git is missing or ``repo`` is not in a
    repository. Missing objects (a shallow or partial clone) are counted as unreadable.
    """
    repo = Path(repo).expanduser()
    if not repo.exists():
        raise GitScanError(f"git history scan: {repo} does not exist")
    git = shutil.which("git")
    if git is None:
        raise GitScanError(f"git history scan of {repo}: git is not installed (not on PATH)")
    base = _top(git, repo)
    usable, short = split_short(needles)
    listing = _run(git, repo, "rev-list", "--all", "--topo-order", "--reverse", "--format=%T")
    # "commit <id>" then the root tree's id, per commit, oldest first
    words = [w.decode("ascii") for w in listing.split()]
    commits = [
        (words[i + 1], words[i + 2]) for i in range(0, len(words) - 2, 3) if words[i] == "commit"
    ]

    tally = Tally()
    hits: list[RawHit] = []
    with _CatFile(git, repo) as objects:
        # (blob, path) -> the first commit holding that blob at that path
        placements: dict[tuple[str, bytes], str] = {}
        trees_seen: set[tuple[str, bytes]] = set()  # (tree, path) pairs already read
        for commit, tree in commits:
            _walk_tree(objects, tree, b"", commit, placements, trees_seen, tally, base)
        by_blob: dict[str, list[tuple[bytes, str]]] = {}
        for (blob, path), commit in placements.items():
            by_blob.setdefault(blob, []).append((path, commit))
        for blob, places in by_blob.items():
            data = _blob(objects, blob, max_file_bytes, tally, base / os.fsdecode(places[0][0]))
            if data is None or not usable:
                continue
            for path, commit in places:
                hits.extend(search(base / os.fsdecode(path), data, usable, tally, commit))
    return sort_hits(hits), tally.stats((repo,), max_file_bytes, short, commits=len(commits))


def _walk_tree(
    objects: _CatFile,
    tree: str,
    prefix: bytes,
    commit: str,
    placements: dict[tuple[str, bytes], str],
    trees_seen: set[tuple[str, bytes]],
    tally: Tally,
    base: Path,
) -> None:
    """Record every blob under ``tree``; iterative, as histories nest folders deeply too."""
    stack = [(tree, prefix)]
    while stack:
        oid, at = stack.pop()
        if (oid, at) in trees_seen:  # read before at this path: same blobs, older commit
            continue
        trees_seen.add((oid, at))
        got = objects.read(oid)
        if got is None or got[0] != "tree":
            tally.unreadable_dirs.add(base / os.fsdecode(at) if at else base)
            continue
        for mode, name, child in _entries(got[1], objects.raw_len):
            path = at + b"/" + name if at else name
            if mode == _TREE:
                stack.append((child, path))
            elif mode != _GITLINK:  # files, executables, symlinks (a blob holding the target)
                placements.setdefault((child, path), commit)


def _entries(data: bytes, raw_len: int) -> list[tuple[bytes, bytes, str]]:
    """(mode, name, object id) of a tree object: ``<mode> <name>\\0<raw id>`` repeated."""
    out = []
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        oid = data[nul + 1 : nul + 1 + raw_len].hex()
        out.append((data[pos:space], data[space + 1 : nul], oid))
        pos = nul + 1 + raw_len
    return out


def _blob(
    objects: _CatFile, oid: str, max_file_bytes: int, tally: Tally, shown: Path
) -> bytes | None:
    size = objects.size(oid)
    if size is None:
        tally.unreadable_files.add(shown)
        return None
    if size > max_file_bytes:
        tally.skipped[Skip.LARGE] += 1
        return None
    got = objects.read(oid)
    if got is None:
        tally.unreadable_files.add(shown)
        return None
    return admit(got[1], max_file_bytes, tally)


class _CatFile:
    """Two long-lived ``git cat-file`` processes: sizes first, so a huge blob is never read."""

    def __init__(self, git: str, repo: Path) -> None:
        self._repo = repo
        self._check = _spawn(git, repo, "--batch-check")
        self._batch = _spawn(git, repo, "--batch")
        self.raw_len = 20

    def __enter__(self) -> _CatFile:
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in (self._check, self._batch):
            if proc.stdin:
                proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout:
                proc.stdout.close()

    def _ask(self, proc: subprocess.Popen[bytes], oid: str) -> list[bytes] | None:
        stdin, stdout = _pipes(proc)
        try:
            stdin.write(oid.encode("ascii") + b"\n")
            stdin.flush()
        except OSError as exc:
            raise GitScanError(f"git history scan of {self._repo}: git cat-file failed") from exc
        header = stdout.readline()
        if not header:
            raise GitScanError(f"git history scan of {self._repo}: git cat-file stopped")
        parts = header.split()
        if len(parts) != 3:  # "<oid> missing" (shallow or partial clone)
            return None
        self.raw_len = len(parts[0]) // 2  # 20 bytes for SHA-1, 32 for SHA-256 repositories
        return parts

    def size(self, oid: str) -> int | None:
        parts = self._ask(self._check, oid)
        return None if parts is None else int(parts[2])

    def read(self, oid: str) -> tuple[str, bytes] | None:
        parts = self._ask(self._batch, oid)
        if parts is None:
            return None
        _, stdout = _pipes(self._batch)
        size = int(parts[2])
        data = stdout.read(size)
        stdout.read(1)  # the newline after the content
        if len(data) != size:
            raise GitScanError(f"git history scan of {self._repo}: git cat-file stopped")
        return parts[1].decode("ascii"), data


def _pipes(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    assert proc.stdin is not None and proc.stdout is not None
    return proc.stdin, proc.stdout


def _spawn(git: str, repo: Path, mode: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [git, "-C", str(repo), "cat-file", mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )


def _top(git: str, repo: Path) -> Path:
    """The folder tree paths are relative to: the work tree's top, or the bare repository."""
    # Outside a repository this raises the clear error (see _run).
    if _run(git, repo, "rev-parse", "--is-bare-repository").strip() == b"true":
        return repo
    return Path(os.fsdecode(_run(git, repo, "rev-parse", "--show-toplevel").rstrip(b"\n")))


def _run(git: str, repo: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(
            [git, "-C", str(repo), *args],
            capture_output=True,
            env=_env(),
            check=False,
        )
    except OSError as exc:
        raise GitScanError(f"git history scan of {repo}: cannot run git ({exc.strerror})") from exc
    if done.returncode != 0:
        if b"not a git repository" in done.stderr:
            raise GitScanError(f"git history scan: {repo} is not a git repository")
        first = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = first[0] if first else f"exit status {done.returncode}"
        raise GitScanError(f"git history scan of {repo}: git {args[0]} failed: {why}")
    return done.stdout


def _env() -> dict[str, str]:
    # Messages parsed above are English; never prompt for credentials or a pager.
    return {**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat"}
