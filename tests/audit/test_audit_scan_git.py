"""A key removed from the tip is still in the history every clone carries: the git scan finds
it, names the commit and the path, and fails clearly where there is no history to read."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pipelines.api.redact import needles
from pipelines.audit.git_scan import GitScanError, scan_git
from pipelines.audit.scan import ALLOW_MARKER, ScanPathError, scan
from tests.audit.audit_helpers import git

KEY = "sk_live_4f9c+2a7e/1b3d=5f6a8c0e2b4d6f8a1c3e"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "web"
    path.mkdir()
    git(path, "init", "-q")
    return path


def test_a_key_removed_from_the_tip_is_found_in_history(repo: Path) -> None:
    (repo / "README.md").write_text("hello\n")
    first = commit_all(repo, "start")
    (repo / "config").mkdir()
    (repo / "config" / "prod.env").write_text(f"A=1\nAPI_KEY={KEY}\n")
    added = commit_all(repo, "add config")
    (repo / "config" / "prod.env").write_text("A=1\nAPI_KEY=${API_KEY}\n")
    commit_all(repo, "read the key from the environment")
    (repo / "notes.md").write_text("more\n")
    commit_all(repo, "later")

    tip_hits, _ = scan([repo], {"k": needles(KEY)})
    assert tip_hits == []  # the working tree no longer holds it

    hits, stats = scan_git(repo, {"k": needles(KEY)})
    assert [(h.key, h.path, h.line, h.column, h.encoding, h.commit) for h in hits] == [
        ("k", repo / "config" / "prod.env", 2, 9, "plain", added)
    ]
    assert first != added
    assert stats.commits_scanned == 4
    # README, two versions of prod.env, notes.md: each distinct blob read once
    assert stats.files_scanned == 4
    assert stats.roots == (str(repo),)
    assert (stats.skipped_unreadable, stats.skipped_unreadable_dirs) == (0, 0)


def test_the_oldest_commit_is_named_and_other_refs_are_read(repo: Path) -> None:
    (repo / "a.env").write_text(f"K={KEY}\n")
    oldest = commit_all(repo, "add")
    (repo / "b.txt").write_text("unrelated\n")
    commit_all(repo, "still there")
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "moved").mkdir()
    (repo / "moved" / "copy.env").write_text(f"  {KEY}  # {ALLOW_MARKER.decode()}\n")
    side = commit_all(repo, "copy on a side branch")
    git(repo, "checkout", "-q", "-")
    git(repo, "rm", "-q", "a.env")
    commit_all(repo, "remove on the main branch")

    hits, stats = scan_git(repo, {"k": needles(KEY)})
    got = {(h.path.relative_to(repo).as_posix(), h.commit, h.suppressed) for h in hits}
    assert got == {("a.env", oldest, False), ("moved/copy.env", side, True)}
    assert stats.suppressed == 1
    assert stats.commits_scanned == 4


def test_history_hits_keep_hostile_paths_literally(repo: Path) -> None:
    name = "[link=https:evil]x[-link]\x1b[31m.env"
    (repo / name).write_text(KEY)
    commit_all(repo, "hostile")
    (hit,) = scan_git(repo, {"k": needles(KEY)})[0]
    assert hit.path == repo / name


def test_binary_large_and_short_keys_are_counted(repo: Path) -> None:
    (repo / "blob.bin").write_bytes(b"\0\1" + KEY.encode())
    (repo / "big.log").write_text("x" * 2000 + KEY)
    (repo / "ok.txt").write_text("desk1\n")
    commit_all(repo, "files")
    hits, stats = scan_git(repo, {"k": needles(KEY), "tiny": needles("k1")}, max_file_bytes=1000)
    assert hits == []
    assert (stats.skipped_binary, stats.skipped_large, stats.files_scanned) == (1, 1, 1)
    assert stats.short_keys == ("tiny",)


def test_an_empty_repository_has_nothing_to_scan(repo: Path) -> None:
    hits, stats = scan_git(repo, {"k": needles(KEY)})
    assert hits == [] and stats.commits_scanned == 0


def test_a_folder_that_is_not_a_repository_fails_with_one_clear_line(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    if subprocess.run(["git", "-C", str(plain), "rev-parse"], capture_output=True).returncode == 0:
        pytest.skip("the temporary folder lies inside a git repository")
    with pytest.raises(GitScanError) as caught:
        scan_git(plain, {"k": needles(KEY)})
    assert str(caught.value) == f"git history scan: {plain} is not a git repository"
    assert isinstance(caught.value, ScanPathError)
    with pytest.raises(GitScanError, match="does not exist"):
        scan_git(tmp_path / "missing", {"k": needles(KEY)})


def test_a_missing_git_fails_with_one_clear_line(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(repo / "no-bin-here"))
    with pytest.raises(GitScanError) as caught:
        scan_git(repo, {"k": needles(KEY)})
    message = str(caught.value)
    assert "git is not installed" in message and str(repo) in message
    assert "\n" not in message
