"""The walk reads what it was given, or says what it could not: deep trees, special files,
unreadable files and folders, and file names that look like markup or terminal escapes."""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import socket
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipelines.api.redact import needles
from pipelines.audit.report import ScanStats
from pipelines.audit.scan import RawHit, ScanPathError, scan

KEY = "sk_live_4f9c+2a7e/1b3d=5f6a8c0e2b4d6f8a1c3e"
NOBODY = 65534


@pytest.mark.slow
def test_a_tree_deeper_than_the_recursion_limit_is_walked(tmp_path: Path) -> None:
    depth = 1200
    assert depth > sys.getrecursionlimit()
    # Built and removed one level at a time: Path.mkdir(parents=True) and shutil.rmtree
    # recurse too, and would fail on this tree as os.walk did.
    folders = [tmp_path]
    for _ in range(depth):
        folders.append(folders[-1] / "d")
        os.mkdir(folders[-1])
    bottom = folders[-1] / "deep.env"
    bottom.write_text(f"API_KEY={KEY}\n")
    try:
        hits, stats = scan([tmp_path], {"k": needles(KEY)})
    finally:
        bottom.unlink()
        for folder in reversed(folders[1:]):
            os.rmdir(folder)
    assert [(h.path, h.line, h.column) for h in hits] == [(bottom, 1, 9)]
    assert stats.files_scanned == 1
    assert (stats.skipped_unreadable, stats.skipped_unreadable_dirs) == (0, 0)


def test_the_walk_is_sorted_and_does_not_follow_symlinked_folders(tmp_path: Path) -> None:
    for name in ("b", "a", "c"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.txt").write_text(KEY)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "y.txt").write_text(KEY)
    os.symlink(outside, tmp_path / "link")
    hits, stats = scan([tmp_path], {"k": needles(KEY)})
    assert [h.path.parent.name for h in hits] == ["a", "b", "c"]
    assert stats.skipped_symlinks == 1


@pytest.fixture
def hang_guard() -> Iterator[None]:
    """Fail instead of hanging forever if the scan ever opens a FIFO and waits for a writer."""

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("the scan blocked on a special file")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.usefixtures("hang_guard")
def test_fifos_and_sockets_are_counted_and_never_opened(tmp_path: Path) -> None:
    # Opening a FIFO for reading blocks until a writer comes: the scan would hang forever.
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / "another.env")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s.sock"))
        (tmp_path / "a.env").write_text(KEY)
        hits, stats = scan([tmp_path], {"k": needles(KEY)})
    finally:
        sock.close()
    assert [h.path.name for h in hits] == ["a.env"]
    assert stats.skipped_special == 3
    assert stats.files_scanned == 1 and stats.skipped_unreadable == 0


@pytest.mark.usefixtures("hang_guard")
def test_a_fifo_given_as_a_root_is_counted_not_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    hits, stats = scan([tmp_path / "pipe"], {"k": needles(KEY)})
    assert hits == [] and stats.skipped_special == 1


# File names cannot hold "/", so the markup's closing tags use the other spellings.
HOSTILE = [
    "[bold]x[-bold].env",
    "[link=https:evil.example]click[-link].env",
    "esc\x1b[31mred\x1b[0m\x07.env",
    "osc\x1b]8;;https:evil.example\x1b\\x.env",
    "new\nline.env",
    "[.env",
    "back\\slash].env",
]


def test_hostile_file_names_are_scanned_and_kept_literally(tmp_path: Path) -> None:
    folder = tmp_path / "[red]dir[-red]"
    folder.mkdir()
    expected = set()
    for name in HOSTILE:
        (folder / name).write_text(f"k={KEY}\n")
        expected.add(str(folder / name))
    undecodable = os.fsencode(folder) + b"/bad\xff\xfe.env"
    with open(undecodable, "wb") as handle:
        handle.write(KEY.encode())
    hits, stats = scan([tmp_path], {"k": needles(KEY)})
    assert {str(h.path) for h in hits} == expected | {os.fsdecode(undecodable)}
    assert os.fsencode(str(next(h.path for h in hits if "bad" in str(h.path)))) == undecodable
    assert stats.files_scanned == len(HOSTILE) + 1


def test_a_file_that_fails_on_read_is_counted_and_listed(tmp_path: Path) -> None:
    # A real read error, even as root: reading address 0 of our own memory fails with EIO.
    mem = Path("/proc/self/mem")
    if not mem.exists():
        pytest.skip("needs Linux /proc: /proc/self/mem is the file that fails on read as root")
    (tmp_path / "a.env").write_text(KEY)
    hits, stats = scan([tmp_path, mem], {"k": needles(KEY)})
    assert [h.path.name for h in hits] == ["a.env"]
    assert stats.skipped_unreadable == 1
    assert stats.unreadable_files == (str(mem),)


@pytest.fixture
def shared_tree() -> Iterator[Path]:
    """A tree that an unprivileged user can reach (pytest's own tmp folder is root's 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="creditlens-scan-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in [folder, *folder.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder)


def scan_without_privileges(*roots: Path) -> tuple[list[RawHit], ScanStats]:
    """Scan as the user ``nobody`` in a forked child: as root, mode 000 does not stop reads.

    A fork (not a new interpreter) because the interpreter may live in root's home, which
    ``nobody`` cannot execute. A ScanPathError in the child is raised here again.
    """
    if os.geteuid() != 0:
        return scan(list(roots), {"k": needles(KEY)})
    outcome = _as_nobody(lambda: scan(list(roots), {"k": needles(KEY)}))
    if isinstance(outcome, ScanPathError):
        raise outcome
    return outcome


def _as_nobody(work: Callable[[], object]) -> object:
    """What ``work`` returns, or the ScanPathError it raises, run as ``nobody``."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            try:
                result = work()
            except ScanPathError as exc:
                result = exc
            payload = pickle.dumps(result)
            with os.fdopen(write_end, "wb") as out:
                out.write(payload)
            status = 0
        except PermissionError:
            status = 3
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 3:
        pytest.skip("running as root without the right to switch to an unprivileged user")
    assert os.waitstatus_to_exitcode(status) == 0
    return pickle.loads(payload)


def test_unreadable_files_and_folders_are_counted_and_listed(shared_tree: Path) -> None:
    (shared_tree / "ok.env").write_text(f"k={KEY}\n")
    locked_dir = shared_tree / "locked"
    locked_dir.mkdir()
    (locked_dir / "hidden.env").write_text(f"k={KEY}\n")
    locked_file = shared_tree / "secret.env"
    locked_file.write_text(f"k={KEY}\n")
    for path in (shared_tree, locked_dir, locked_file, shared_tree / "ok.env"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    locked_dir.chmod(0)
    locked_file.chmod(0)
    hits, stats = scan_without_privileges(shared_tree)
    assert [h.path.name for h in hits] == ["ok.env"]
    assert stats.files_scanned == 1
    assert stats.skipped_unreadable == 1 and stats.unreadable_files == (str(locked_file),)
    assert stats.skipped_unreadable_dirs == 1 and stats.unreadable_dirs == (str(locked_dir),)
    assert stat.S_IMODE(locked_file.stat().st_mode) == 0  # nothing was changed to read it


def test_a_root_that_cannot_be_read_at_all_is_refused_not_scanned_as_clean(
    shared_tree: Path,
) -> None:
    """A scan path someone named that the audit cannot read (a locked folder, a file behind one,
    a folder it may list but not enter) scans nothing: ScanPathError, exit 2 in the CLI."""
    locked_dir = shared_tree / "locked"
    locked_dir.mkdir()
    (locked_dir / "hidden.env").write_text(f"k={KEY}\n")
    unenterable = shared_tree / "listed-only"
    unenterable.mkdir()
    (unenterable / "inside.env").write_text(f"k={KEY}\n")
    locked_dir.chmod(0)
    unenterable.chmod(0o644)  # read without search: names listed, nothing opened
    for root in (locked_dir, locked_dir / "hidden.env", unenterable):
        with pytest.raises(ScanPathError, match="cannot be read") as refused:
            scan_without_privileges(root)
        assert str(root) in str(refused.value) and "nothing of it" in str(refused.value)


def test_a_folder_listed_but_not_entered_below_a_root_is_one_unreadable_folder(
    shared_tree: Path,
) -> None:
    (shared_tree / "ok.env").write_text(f"k={KEY}\n")
    unenterable = shared_tree / "listed-only"
    unenterable.mkdir()
    for name in ("a.env", "b.env"):
        (unenterable / name).write_text(f"k={KEY}\n")
    unenterable.chmod(0o644)
    hits, stats = scan_without_privileges(shared_tree)
    assert [h.path.name for h in hits] == ["ok.env"]
    assert stats.unreadable_dirs == (str(unenterable),) and stats.skipped_unreadable_dirs == 1
    assert stats.skipped_unreadable == 0  # not its two files, which were never in reach


def test_a_scan_path_that_is_a_symlink_loop_is_refused(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    os.symlink(loop, loop)  # resolves to itself: ELOOP for root as for anyone
    with pytest.raises(ScanPathError, match="symlink loop"):
        scan([loop], {"k": needles(KEY)})
