"""Second Pythons with another DuckDB, for what the suite's own DuckDB (1.5.5) cannot stand for:
1.4, the LTS that BI tools, DBeaver, R and Node still ship (the analyst copy must open there),
and 2.0, which writes warehouse files 1.5 cannot read (creditlens must say so in one line, and
move what 2.0 exports).

CI prepares each (.ci/run) and names its interpreter in its variable; a developer's run without
the variable builds it once under the temporary folder and reuses it after, and skips, saying
why, only when pip cannot install it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ENV = "CREDITLENS_DUCKDB14_PYTHON"
# The latest 1.4 LTS release pip offers; .ci/run installs the same one.
VERSION = "1.4.5"
ENV_20 = "CREDITLENS_DUCKDB20_PYTHON"
VERSION_20 = "2.0.0"


def duckdb14_python() -> Path:
    return duckdb_python(VERSION, ENV)


def duckdb20_python() -> Path:
    return duckdb_python(VERSION_20, ENV_20)


def duckdb_python(version: str, env: str) -> Path:
    given = os.environ.get(env)
    if given:
        return Path(given)  # CI's: a missing one fails the test, never skips it
    venv = Path(tempfile.gettempdir()) / f"creditlens-duckdb-{version}"
    python = venv / "bin" / "python"
    if _version(python) == version:
        return python
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--clear", str(venv)], capture_output=True, text=True
    )
    if made.returncode == 0:
        # pytz: DuckDB's Python client imports it to hand back TIMESTAMPTZ values
        made = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"duckdb=={version}", "pytz"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    if made.returncode != 0 or _version(python) != version:
        last = (made.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"cannot install duckdb=={version} in {venv} ({last}); set {env}")
    return python


def _version(python: Path) -> str | None:
    if not python.exists():
        return None
    found = subprocess.run(
        [str(python), "-c", "import duckdb; print(duckdb.__version__)"],
        capture_output=True,
        text=True,
    )
    return found.stdout.strip() if found.returncode == 0 else None
