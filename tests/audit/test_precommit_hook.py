"""The pre-commit hook (.pre-commit-hooks.yaml): a valid hook definition whose command, run as
pre-commit runs it (entry, then args, then the staged file names) in a git repository, fails a
commit that stages a copy of an inventoried key, names the file, and never prints the key."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator import Scenario
from tests.audit.audit_helpers import key_block, write_inventory
from tests.conftest import Simulated

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
HOOK_ID = "creditlens-audit"
KEY = "sk_live+Hook/3c5e7f9b2d4f6a8c0e1d3f5b7a9c2e=="
SCENARIO = Scenario.named(
    "small",
    companies=[
        {
            "name": "acme",
            "history_days": 3,
            "entries_per_day": 5,
            "keys": [{"label": "primary", "secret": KEY}],
        }
    ],
)
# The keys pre-commit requires of a hook definition, and those it knows (pre_commit.clientlib).
REQUIRED = {"id", "name", "entry", "language"}
KNOWN = REQUIRED | {
    "alias",
    "files",
    "exclude",
    "types",
    "types_or",
    "exclude_types",
    "additional_dependencies",
    "args",
    "always_run",
    "fail_fast",
    "pass_filenames",
    "description",
    "language_version",
    "log_file",
    "minimum_pre_commit_version",
    "require_serial",
    "stages",
    "verbose",
}


def hook() -> dict[str, Any]:
    hooks = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert isinstance(hooks, list), "a manifest is a list of hooks"
    found = [h for h in hooks if isinstance(h, dict) and h.get("id") == HOOK_ID]
    assert len(found) == 1, hooks
    return found[0]


def test_the_manifest_defines_the_hook() -> None:
    definition = hook()
    assert set(definition) >= REQUIRED, sorted(REQUIRED - set(definition))
    assert set(definition) <= KNOWN, sorted(set(definition) - KNOWN)
    assert all(isinstance(definition[k], str) and definition[k] for k in REQUIRED)
    assert definition["language"] == "python"
    assert shlex.split(definition["entry"])[:2] == ["creditlens", "audit"]
    assert definition.get("pass_filenames", True) is True
    # One audit for all staged files: parallel batches would each probe every key.
    assert definition.get("require_serial") is True
    args = definition.get("args", [])
    assert isinstance(args, list) and "--inventory" in [*shlex.split(definition["entry"]), *args]


def test_pre_commit_itself_accepts_the_manifest() -> None:
    clientlib = pytest.importorskip("pre_commit.clientlib", reason="pre-commit is not installed")
    loaded = clientlib.load_manifest(str(MANIFEST))
    assert [h["id"] for h in loaded] == [HOOK_ID]


def audit_takes_paths() -> bool:
    """Whether `creditlens audit` takes positional PATH arguments, which the hook relies on."""
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "audit", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    usage = next((line for line in result.stdout.splitlines() if "Usage:" in line), "")
    return "PATH" in usage


def run_hook(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The hook's command as pre-commit builds it: entry, args, then the staged file names.
    ``creditlens`` is this checkout's CLI, as the hook's own environment would install it."""
    definition = hook()
    staged = subprocess.run(
        ["git", "diff", "--cached", "--name-only", "-z"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    entry = shlex.split(definition["entry"])
    command = [sys.executable, "-m", "pipelines.cli", *entry[1:], *definition.get("args", [])]
    return subprocess.run(
        [*command, *(name for name in staged if name)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.mark.slow
def test_the_hook_fails_a_commit_staging_a_key_and_names_the_file(
    simulated: Callable[..., Simulated], tmp_path: Path
) -> None:
    if not audit_takes_paths():
        pytest.skip(
            "`creditlens audit --help` lists no positional PATH arguments yet: the hook appends "
            "the staged files as paths; re-run once the CLI takes them"
        )
    s = simulated(SCENARIO, demo_key=None)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    args = hook().get("args", [])
    inventory_name = args[args.index("--inventory") + 1]
    inventory = write_inventory(repo, key_block("sync", "SYNC_KEY", "full", ("sync", "server")))
    inventory.rename(repo / inventory_name)
    (repo / "app.py").write_text("print('no key here')\n", encoding="utf-8")
    git(repo, "add", ".")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREDITLENS_", "DAGSTER_"))}
    env.update(
        SYNC_KEY=KEY,
        CREDITLENS_BASE_URL=s.url,
        CREDITLENS_AUDIT_SECRET="hook-test-installation-secret",
        CREDITLENS_AUDIT_STATE_DIR=str(tmp_path / "state"),
    )

    clean = run_hook(repo, env)
    assert clean.returncode == 0, clean.stdout[-2000:] + clean.stderr[-2000:]

    (repo / "config").mkdir()
    (repo / "config" / "settings.py").write_text(f'API_KEY = "{KEY}"\n', encoding="utf-8")
    git(repo, "add", "config/settings.py")
    leaked = run_hook(repo, env)
    printed = leaked.stdout + leaked.stderr
    assert leaked.returncode == 1, printed[-3000:]
    assert "config/settings.py" in printed, printed[-3000:]
    assert KEY not in printed
