"""Writing inventories for tests: keys live in an env mapping, never in the file."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SECRET = b"test-installation-secret"


def key_block(
    name: str, var: str, scope: str, *places: tuple[str, str], base_url: str | None = None
) -> str:
    lines = ["[[keys]]", f'name = "{name}"', f'env = "{var}"', f'scope = "{scope}"']
    if base_url:
        lines.append(f'base_url = "{base_url}"')
    rendered = ", ".join(f'{{ place = "{p}", kind = "{k}" }}' for p, k in places)
    lines.append(f"places = [{rendered}]")
    return "\n".join(lines) + "\n"


def write_inventory(folder: Path, *blocks: str) -> Path:
    path = folder / "keys.toml"
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


def git(repo: Path, *args: str) -> str:
    """git in ``repo`` with a fixed identity and no user or system configuration."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo.parent),
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()
