"""Writing inventories for tests: keys live in an env mapping, never in the file."""

from __future__ import annotations

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
