"""The rooms keep their boundaries: the import contracts in pyproject.toml hold, and break.

The contracts say which room may import which (the API client stands alone, transforms are pure,
the simulator never imports creditlens, only pipelines.warehouse opens DuckDB, the report site
reads through the read-only connection). A suite that only ran them could pass forever on a
misconfigured contract, so one test adds a forbidden import to a copy of the tree and expects
the contract to name it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipelines", "transforms", "dashboards", "simulator")
PRODUCTION_ROOMS = PACKAGES
# Not production, but read and changed as often: the benchmarks keep the same limit.
SIZED_ROOMS = (*PRODUCTION_ROOMS, "benchmarks")
MAX_MODULE_LINES = 400


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
         "lint_imports_command()", "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )  # fmt: skip


def test_import_contracts_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def _copy_tree(target: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", target / "pyproject.toml")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, target / package, ignore=shutil.ignore_patterns("__pycache__")
        )


def test_a_forbidden_import_breaks_its_contract(tmp_path: Path) -> None:
    _copy_tree(tmp_path)
    module = tmp_path / "transforms" / "aggregate.py"
    module.write_text(module.read_text() + "\nimport duckdb  # forbidden: transforms are pure\n")
    dashboards = tmp_path / "dashboards" / "read.py"
    dashboards.write_text(
        dashboards.read_text() + "\nfrom pipelines.warehouse import writer  # forbidden\n"
    )
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout[-4000:]
    assert "transforms.aggregate -> duckdb" in result.stdout
    assert "dashboards.read -> pipelines.warehouse.writer" in result.stdout
    assert "Transforms are pure" in result.stdout


def test_no_production_or_benchmark_module_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for room in SIZED_ROOMS
        for path in sorted((ROOT / room).rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by job): {long}"
