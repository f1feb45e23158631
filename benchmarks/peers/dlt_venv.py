"""The dlt peer's own virtualenv, outside the repository: dlt is never a creditlens dependency."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DEFAULT_VENV = Path("/tmp/creditlens-bench-dlt")
REQUIREMENT = "dlt[duckdb]"
INSTALL_TIMEOUT_S = 900


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _has_dlt(python: Path) -> bool:
    probe = [str(python), "-c", "import dlt, duckdb"]
    return subprocess.run(probe, capture_output=True, timeout=120).returncode == 0


def ensure_dlt_python(explicit: str | None, venv: Path = DEFAULT_VENV) -> Path:
    """An interpreter that can import dlt and duckdb: ``explicit``, or the venv, made if missing."""
    if explicit:
        python = Path(explicit)
        if not _has_dlt(python):
            raise RuntimeError(f"{python} cannot import dlt and duckdb")
        return python
    python = venv_python(venv)
    if python.exists() and _has_dlt(python):
        return python
    print(f"creating the dlt peer's virtualenv in {venv} (first use only)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    install = [str(python), "-m", "pip", "install", "--quiet", REQUIREMENT]
    subprocess.run(install, check=True, timeout=INSTALL_TIMEOUT_S)
    if not _has_dlt(python):
        raise RuntimeError(f"installed {REQUIREMENT} into {venv} but it does not import")
    return python
