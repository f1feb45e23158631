"""--scan-git: a key deleted from the tip but still in history is a finding with its commit,
in the terminal, JSON, SARIF (a location property) and the key_audit_findings table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from pipelines.audit.scan import MIN_SCAN_KEY_CHARS
from simulator import ServerHandle, Simulator
from tests.audit.audit_cli_helpers import assert_no_key, one_error_line, run_cli, write
from tests.audit.audit_helpers import git, key_block, write_inventory

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def history(tmp_path: Path, sim: Simulator, server: ServerHandle) -> dict:
    """A repository where a commit added the key and a later one deleted it."""
    full = sim.key_for("acme")
    repo = tmp_path / "web"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo / "README.md", "# web\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "start")
    write(repo / "config" / "[prod].env", f"# prod\nAPI_KEY={full}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "add the key")
    leaked = git(repo, "rev-parse", "HEAD")
    (repo / "config" / "[prod].env").unlink()
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "remove the key")
    inventory = write_inventory(
        tmp_path, key_block("sync", "SYNC", "campaigns", ("sync service", "server"))
    )
    return {
        "repo": repo,
        "commit": leaked,
        "key": full,
        "env": {"SYNC": full},
        "base": ["--inventory", str(inventory), "--base-url", server.url],
    }


@pytest.mark.slow
def test_a_key_in_history_is_a_finding_with_its_commit(history: dict, tmp_path: Path) -> None:
    repo, commit = history["repo"], history["commit"]
    sarif, warehouse = tmp_path / "a.sarif", tmp_path / "w.duckdb"
    args = [*history["base"], "--scan-git", str(repo), "--sarif-out", str(sarif)]
    env = {**history["env"], "CREDITLENS_WAREHOUSE": str(warehouse)}
    result = run_cli(args, env)
    assert result.exit_code == 1, result.output
    path = repo.resolve() / "config" / "[prod].env"
    assert f"at: {path}:2:9 in commit {commit} (plain)" in result.stdout

    run = json.loads(sarif.read_text())["runs"][0]
    located = [
        loc for r in run["results"] if r["ruleId"] == "CLA003" for loc in r.get("locations", [])
    ]
    assert [loc["properties"]["commit"] for loc in located] == [commit]
    assert located[0]["physicalLocation"]["region"]["startLine"] == 2

    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(
            "SELECT rule_id, severity, path, line, commit FROM key_audit_findings "
            "WHERE commit IS NOT NULL"
        ).fetchall()
    assert rows == [("CLA003", "high", str(path), 2, commit)]
    assert_no_key([result.output, sarif.read_text()], [history["key"]])


def test_json_carries_the_commit_and_the_working_tree_scan_does_not_see_it(
    history: dict,
) -> None:
    only_tree = run_cli([*history["base"], "--scan", str(history["repo"])], history["env"])
    assert "[prod].env" not in only_tree.stdout
    result = run_cli(
        [*history["base"], "--scan-git", str(history["repo"]), "--format", "json"], history["env"]
    )
    doc = json.loads(result.stdout)
    hits = [h for h in doc["scan_hits"] if h["commit"]]
    assert [(Path(h["path"]).name, h["commit"]) for h in hits] == [
        ("[prod].env", history["commit"])
    ]


def test_a_folder_that_is_not_a_repository_is_exit_2(history: dict, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    line = one_error_line(run_cli([*history["base"], "--scan-git", str(plain)], history["env"]))
    assert str(plain) in line


def test_files_and_history_scanned_together_keep_one_minimum_key_length(history: dict) -> None:
    """Merged scan statistics add counts, but a limit both scans ran under stays what it was."""
    result = run_cli(
        [
            *history["base"],
            "--scan",
            str(history["repo"]),
            "--scan-git",
            str(history["repo"]),
            "--format",
            "json",
        ],
        history["env"],
    )
    scan = json.loads(result.stdout)["scan"]
    assert scan["min_key_chars"] == MIN_SCAN_KEY_CHARS
    assert scan["commits_scanned"] == 3
