"""One simulated company of N ledger entries, served by its own simulator process on loopback.

Sized as two years of history (730 UTC days, by default) at N/730 entries a day, so every size
reads the same two API windows; the seed and the simulated now are fixed, so a size always holds
the same data. The process is always stopped, whatever happens in between.
"""

from __future__ import annotations

import os
import queue
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import yaml

ROOT = Path(__file__).resolve().parents[2]
HISTORY_DAYS = 730
MAX_WINDOW_DAYS = 366
COMPANY = "acme"
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


class Window(NamedTuple):
    """An inclusive range of UTC days, written ``first..last`` as the contenders' --window."""

    first: date
    last: date

    def __str__(self) -> str:
        return f"{self.first.isoformat()}..{self.last.isoformat()}"


@dataclass
class SimulatedCompany:
    base_url: str
    key: str
    account: str
    first: date
    last: date
    windows: list[Window]
    startup_s: float
    peak_rss_mb: float = 0.0


def windows(first: date, last: date) -> list[Window]:
    """Consecutive inclusive windows of at most 366 days: what the API accepts."""
    out, start = [], first
    while start <= last:
        end = min(last, start + timedelta(days=MAX_WINDOW_DAYS - 1))
        out.append(Window(start, end))
        start = end + timedelta(days=1)
    return out


def write_scenario(path: Path, entries: int, history_days: int = HISTORY_DAYS) -> None:
    scenario = {
        "name": f"ingestion-benchmark-{entries}",
        "companies": [
            {
                "name": COMPANY,
                "history_days": history_days,
                "entries_per_day": entries / history_days,
            }
        ],
    }
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")


def _pump(stream: object, lines: queue.Queue[str | None]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.put(line)
    lines.put(None)


@contextmanager
def simulated_company(
    entries: int,
    now: datetime,
    workdir: Path,
    *,
    history_days: int = HISTORY_DAYS,
    startup_timeout_s: float = 600,
) -> Iterator[SimulatedCompany]:
    """Starts `python -m simulator` for a company of about ``entries`` entries; stops it after."""
    workdir.mkdir(parents=True, exist_ok=True)
    scenario = workdir / "scenario.yaml"
    write_scenario(scenario, entries, history_days)
    key = f"bench-{secrets.token_hex(12)}"
    command = [sys.executable, "-m", "simulator", "--host", "127.0.0.1", "--port", "0"]
    command += ["--scenario", str(scenario), "--seed", "0", "--key", key]
    command += ["--now", now.isoformat()]
    started = time.perf_counter()
    with (workdir / "simulator.stderr").open("wb") as stderr:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    company: SimulatedCompany | None = None
    try:
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        deadline = started + startup_timeout_s
        base_url = None
        while base_url is None:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.perf_counter()))
            except queue.Empty:
                raise RuntimeError(
                    f"the simulator did not listen within {startup_timeout_s}s"
                ) from None
            if line is None:
                err = (workdir / "simulator.stderr").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the simulator exited before listening:\n{err}")
            if match := LISTENING.search(line):
                base_url = match.group(1)
        last = now.date()
        first = last - timedelta(days=history_days - 1)
        company = SimulatedCompany(
            base_url=base_url,
            key=key,
            account=COMPANY,
            first=first,
            last=last,
            windows=windows(first, last),
            startup_s=time.perf_counter() - started,
        )
        yield company
    finally:
        peak_kb = _stop(proc)
        if company is not None:
            company.peak_rss_mb = peak_kb / 1024


def _stop(proc: subprocess.Popen[str]) -> int:
    """SIGINT (uvicorn's graceful stop), then SIGKILL of its group; returns its peak RSS in KiB."""
    try:
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                return usage.ru_maxrss
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        return usage.ru_maxrss
    except ChildProcessError:  # already reaped: nothing left to stop or to measure
        return 0
