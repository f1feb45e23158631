"""A second Python with DuckDB 1.4 (the LTS that BI tools, DBeaver, R and Node still ship), to
prove the analyst copy opens there: the test suite's own DuckDB is 2.0 and cannot stand for it.

CI prepares it (.ci/run) and names its interpreter in CREDITLENS_DUCKDB14_PYTHON; a developer's
run without the variable builds it once under the temporary folder and reuses it after, and
skips, saying why, only when pip cannot install it.
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


def duckdb14_python() -> Path:
    given = os.environ.get(ENV)
    if given:
        return Path(given)  # CI's: a missing one fails the test, never skips it
    venv = Path(tempfile.gettempdir()) / f"creditlens-duckdb-{VERSION}"
    python = venv / "bin" / "python"
    if _version(python) == VERSION:
        return python
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--clear", str(venv)], capture_output=True, text=True
    )
    if made.returncode == 0:
        made = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"duckdb=={VERSION}"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    if made.returncode != 0 or _version(python) != VERSION:
        last = (made.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"cannot install duckdb=={VERSION} in {venv} ({last}); set {ENV}")
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
