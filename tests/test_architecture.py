"""The rooms keep their boundaries: the import contracts in pyproject.toml hold, and break.

The contracts say which room may import which: the layers (entry points on top, the API client and
the warehouse at the bottom), transforms pure, the simulator apart, only pipelines.warehouse
opening DuckDB, and what the report site may import (an allow-list, checked here since
import-linter has none). No module of production code imports, through any chain, a module that
imports it back. A suite that only ran these checks could pass forever on a misconfigured one, so
each is also shown a violation and expected to name it. docs/architecture.md quotes the contracts;
a test keeps the quote equal to pyproject.toml, so a claim about who imports whom cannot drift.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from copy import deepcopy
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipelines", "transforms", "dashboards", "simulator")
PRODUCTION_ROOMS = PACKAGES
# Not production, but read and changed as often: the benchmarks keep the same ceiling.
SIZED_ROOMS = (*PRODUCTION_ROOMS, "benchmarks")
# A ceiling that flags a module for a look, not a rule that splits one idea into several files:
# a module is split where a reader would look for two things (docs/architecture.md).
MAX_MODULE_LINES = 800


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
    warehouse = tmp_path / "pipelines" / "warehouse" / "read.py"
    warehouse.write_text(
        warehouse.read_text() + "\nimport dashboards.site  # forbidden: against the layers\n"
    )
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout[-4000:]
    assert "transforms.aggregate -> duckdb" in result.stdout
    assert "Transforms are pure" in result.stdout
    assert "pipelines.warehouse.read -> dashboards.site" in result.stdout
    assert "The layers" in result.stdout


# -- what the report site may import, and no circle ---------------------------------------------


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    """The import graph of production code; imports under TYPE_CHECKING run nowhere, so they
    close no circle."""
    return grimp.build_graph(
        *PRODUCTION_ROOMS, include_external_packages=True, exclude_type_checking_imports=True
    )


def outside_allow_list(graph: grimp.ImportGraph, room: str, allowed: list[str]) -> list[str]:
    """Every ``importer -> imported`` of ``room`` reaching outside itself, the standard library
    and ``allowed`` (a module, or a package and what is in it)."""

    def permitted(module: str) -> bool:
        top = module.split(".")[0]
        inside = (room, *allowed)
        return top in sys.stdlib_module_names or any(
            module == name or module.startswith(f"{name}.") for name in inside
        )

    return sorted(
        f"{importer} -> {imported}"
        for importer in graph.find_descendants(room) | {room}
        for imported in graph.find_modules_directly_imported_by(importer)
        if not permitted(imported)
    )


def _imports_of(graph: grimp.ImportGraph, module: str) -> Iterator[str]:
    return iter(sorted(graph.find_modules_directly_imported_by(module)))


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's, iterative): each is a
    circle of imports."""
    modules = sorted(m for m in graph.modules if m.split(".")[0] in PRODUCTION_ROOMS)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, _imports_of(graph, root))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in modules or c in index), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    cycles.append(sorted(group))
    return cycles


def test_the_report_site_imports_only_its_allow_list(graph: grimp.ImportGraph) -> None:
    allowed = _pyproject()["tool"]["creditlens"]["architecture"]["dashboards-may-import"]
    assert outside_allow_list(graph, "dashboards", allowed) == []


def test_the_allow_list_names_an_import_outside_it(graph: grimp.ImportGraph) -> None:
    allowed = _pyproject()["tool"]["creditlens"]["architecture"]["dashboards-may-import"]
    copy = deepcopy(graph)
    copy.add_import(importer="dashboards.read", imported="pipelines.warehouse.writer")
    copy.add_import(importer="dashboards.site", imported="duckdb")
    assert outside_allow_list(copy, "dashboards", allowed) == [
        "dashboards.read -> pipelines.warehouse.writer",
        "dashboards.site -> duckdb",
    ]


def test_production_code_has_no_import_circle() -> None:
    """No circle, counting the imports under TYPE_CHECKING and inside functions too: a reader
    goes round one either way (grimp reads an import wherever it stands)."""
    every = grimp.build_graph(
        *PRODUCTION_ROOMS,
        include_external_packages=True,
        exclude_type_checking_imports=False,
        cache_dir=None,  # 0.1 s to read it whole; a cache once kept a removed import here
    )
    assert import_cycles(every) == []


def test_an_import_circle_is_found(graph: grimp.ImportGraph) -> None:
    copy = deepcopy(graph)
    copy.add_import(importer="pipelines.runtime.progress", imported="pipelines.cli.runner")
    (circle,) = import_cycles(copy)
    assert {"pipelines.runtime.progress", "pipelines.cli.runner"} <= set(circle)


def test_no_production_or_benchmark_module_is_past_the_ceiling() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for room in SIZED_ROOMS
        for path in sorted((ROOT / room).rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, (
        f"modules over {MAX_MODULE_LINES} lines: look at each; split it only where a reader "
        f"would look for two things: {long}"
    )


# -- the architecture page quotes the contracts ---------------------------------------------------

BEGIN_QUOTE = "<!-- contracts: quoted from pyproject.toml, kept equal by a test -->"
END_QUOTE = "<!-- end of the contracts -->"


def _names(modules: list[str]) -> str:
    return ", ".join(f"`{m}`" for m in modules)


def contracts_in_words() -> str:
    """The contracts of pyproject.toml as docs/architecture.md says them, one source for both."""
    tool = _pyproject()["tool"]
    lines = [BEGIN_QUOTE, ""]
    for contract in tool["importlinter"]["contracts"]:
        if contract["type"] == "layers":
            lines += [
                f"**{contract['name']}.** Each layer may import the layers below it, never one "
                "above; modules side by side (`|`) do not import each other:",
                "",
            ]
            lines += [
                f"{number}. " + " | ".join(f"`{m.strip()}`" for m in layer.split("|"))
                for number, layer in enumerate(contract["layers"], start=1)
            ]
        else:
            sources = contract["source_modules"]
            verb = "imports" if len(sources) == 1 else "import"
            text = (
                f"**{contract['name']}.** {_names(sources)} {verb} none of "
                f"{_names(contract['forbidden_modules'])}"
            )
            if contract.get("ignore_imports"):
                text += f", except {_names(contract['ignore_imports'])}"
            lines.append(text + ".")
        lines.append("")
    allowed = tool["creditlens"]["architecture"]["dashboards-may-import"]
    lines += [
        "**The report site's allow-list.** `dashboards` imports nothing but itself, the standard "
        f"library and {_names(allowed)}.",
        "",
        END_QUOTE,
    ]
    return "\n".join(lines)


def test_the_architecture_page_quotes_the_contracts() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    quoted = contracts_in_words()
    assert quoted in page, (
        "docs/architecture.md no longer quotes pyproject.toml's contracts: replace its block "
        f"between the two markers with\n{quoted}"
    )


def private_imports(source: str, ours: tuple[str, ...] = (*PACKAGES, "benchmarks")) -> list[str]:
    """Each ``from ours.module import _name`` and ``ours_module._name`` of one module's source:
    a private name is its module's own, and a second module leaning on it is a hidden contract."""
    import ast

    tree = ast.parse(source)
    found: list[str] = []
    modules: set[str] = set()  # local names bound to one of our modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ours:
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"from {node.module} import {alias.name}")
                else:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ours:
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.value.id[:1].islower()  # a module, not a class imported from one
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_name() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {line}"
        for room in SIZED_ROOMS
        for path in sorted((ROOT / room).rglob("*.py"))
        for line in private_imports(path.read_text())
    ]
    assert not offenders, "a private name used outside its module (make it public):\n" + "\n".join(
        offenders
    )


def test_a_private_import_is_found() -> None:
    sample = "from pipelines.config.values import _hidden\nimport pipelines.x as px\npx._y\n"
    assert private_imports(sample) == [
        "from pipelines.config.values import _hidden",
        "px._y",
    ]
