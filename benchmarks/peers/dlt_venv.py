"""The dlt peer's own virtualenv, outside the repository: dlt is never a creditlens dependency.

Also how a benchmark runs the peer in it (``peer_command``, ``peer_environment``), so every
benchmark that puts dlt beside creditlens runs the same peer the same way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

PEER_SCRIPT = Path(__file__).resolve().parent / "dlt_peer.py"
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


def peer_command(
    dlt_python: Path, base_url: str, windows: Sequence[object], workdir: Path
) -> list[str]:
    """benchmarks/peers/dlt_peer.py under the dlt interpreter, reading ``windows`` (``a..b``)."""
    command = [str(dlt_python), str(PEER_SCRIPT), "--base-url", base_url, "--workdir", str(workdir)]
    for window in windows:
        command += ["--window", str(window)]
    return command


def peer_environment(key: str) -> dict[str, str]:
    """The peer's environment: its key, no telemetry, and the ``.pyc`` pip compiled into its
    venv (a bytecode cache prefix in the caller's environment would make it compile again)."""
    env = {**os.environ, "BENCH_API_KEY": key, "RUNTIME__DLTHUB_TELEMETRY": "false"}
    env.pop("PYTHONPYCACHEPREFIX", None)
    return env
