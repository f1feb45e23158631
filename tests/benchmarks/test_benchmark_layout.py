"""The benchmarks share their harness through public names, never another module's privates.

``benchmarks/network.py`` once imported ``_levels`` and the floor runner from
``benchmarks/ingestion.py``: two commands bound by a helper neither owned. Whatever two
benchmarks share lives in ``benchmarks/harness/`` (or ``benchmarks/peers/``) under a public name.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
SHARED = ("benchmarks.harness", "benchmarks.peers")


def _imports(path: Path) -> list[tuple[str, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("benchmarks")
        for alias in node.names
    ]


def _command(module: str) -> str:
    """``benchmarks.network.report`` belongs to the command ``network``."""
    return module.removeprefix("benchmarks.").split(".")[0]


def _command_of(path: Path) -> str:
    return path.relative_to(BENCHMARKS).parts[0].removesuffix(".py")


def test_no_benchmark_imports_a_private_name_of_another_module() -> None:
    private = [
        f"{path.relative_to(ROOT)}: from {module} import {name}"
        for path in sorted(BENCHMARKS.rglob("*.py"))
        for module, name in _imports(path)
        if name.startswith("_")
    ]
    assert not private, private


def test_no_benchmark_command_imports_another_command() -> None:
    """ingestion and network each import the shared harness, not one another."""
    crossing = [
        f"{path.relative_to(ROOT)}: from {module}"
        for path in sorted(BENCHMARKS.rglob("*.py"))
        for module, _ in _imports(path)
        if not module.startswith(SHARED) and _command(module) != _command_of(path)
    ]
    assert not crossing, crossing
