"""The machine a benchmark ran on, printed beside its figures.

A figure taken on a busy machine is not the figure of a quiet one: every benchmark prints the
load average (1, 5 and 15 minutes) when it starts and when it ends, so a reader can tell.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_NOW = "2026-06-30T23:59:59+00:00"
WARM_IMPORTS = (
    "import httpx, duckdb, polars, pipelines.cli.main, pipelines.cli.sync_command, "
    "pipelines.definitions"
)


def parse_now(text: str) -> datetime:
    """The simulated now; a naive time is read as UTC."""
    now = datetime.fromisoformat(text)
    return now if now.tzinfo else now.replace(tzinfo=UTC)


def machine() -> dict[str, Any]:
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    total_kb = next((int(line.split()[1]) for line in meminfo if line.startswith("MemTotal")), 0)
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "memory_gb": round(total_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "loadavg_start": list(os.getloadavg()),
    }


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def load_text(load: Sequence[float]) -> str:
    return " ".join(f"{x:.2f}" for x in load)


def machine_line(info: dict[str, Any]) -> str:
    """The first line a benchmark prints: the machine, the date, the load as it starts."""
    return (
        f"machine: {info['cores']} cores ({info['cores_usable']} usable), {info['memory_gb']} GB, "
        f"{info['cpu']}, Python {info['python']}, {info['date']}, "
        f"load {load_text(info['loadavg_start'])}"
    )


def announce() -> dict[str, Any]:
    """The machine, printed as the run starts; ``finish`` adds the load as it ends."""
    info = machine()
    print(machine_line(info))
    return info


def load_line(start: Sequence[float], end: Sequence[float] | None = None) -> str:
    """The load average beside the figures: as the run started and as it ended."""
    end = os.getloadavg() if end is None else end
    return (
        f"load average (1, 5, 15 min): {load_text(start)} at the start, {load_text(end)} at the end"
    )


def finish(info: dict[str, Any]) -> str:
    """Records the load as the run ends in ``info`` and returns the line that prints both."""
    info["loadavg_end"] = list(os.getloadavg())
    return load_line(info["loadavg_start"], info["loadavg_end"])


def use_bytecode_cache(*, warm: bool = True) -> None:
    """Gives our child processes compiled bytecode, as any installed package has.

    Where PYTHONDONTWRITEBYTECODE is set and the virtualenv holds no .pyc (uv does not compile by
    default), every child would compile Dagster and polars from source, seconds a user pays once.
    Unset, Python writes the bytecode it misses beside the sources (``__pycache__``, ignored by
    git) and uses what pip compiled into the virtualenv; one untimed import fills the gaps.
    (A cache prefix outside the tree was tried: it ignores pip's ``.pyc``, so every fresh
    machine compiled all of Dagster into it again, 5 CPU-s in each of the first processes.)
    ``warm`` False leaves that import out (``--skip-warm-up``): a smoke run times nothing, and
    its first child fills the gaps as it goes.
    """
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    if warm:
        subprocess.run([sys.executable, "-c", WARM_IMPORTS], cwd=ROOT, check=True, timeout=600)


SKIP_WARM_UP_HELP = (
    "leave out the untimed warm-up import that fills the bytecode cache (a smoke run: its "
    "times are not figures, and its first child fills the cache itself)"
)


@contextmanager
def scratch_directory(prefix: str, keep: bool) -> Iterator[Path]:
    """A fresh directory for a run's simulators, warehouses and logs; removed after it unless
    ``keep``, and then said where it is."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield scratch
    finally:
        if keep:
            print(f"scratch kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
