"""One simulated company of N ledger entries, served by its own simulator process on loopback.

Sized as two years of history (730 UTC days, by default) at N/730 entries a day, so every size
reads the same two API windows; the seed and the simulated now are fixed, so a size always holds
the same data. The process is always stopped, whatever happens in between.

``simulated_platform`` is the same for many companies at once, each with keys of its own (one
per contender: the rate limit is per key), behind a network (latency, per-key rate limit), in a
process the benchmark can steer (benchmarks/peers/steered_simulator.py): ask what it served per
key, move its clock, change its network.
"""

from __future__ import annotations

import json
import os
import queue
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

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


def write_scenario(
    path: Path,
    entries: int,
    history_days: int = HISTORY_DAYS,
    *,
    companies: Sequence[str] = (COMPANY,),
    keys: Mapping[str, Mapping[str, str]] | None = None,
    network: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> None:
    """Every company of ``entries`` entries over ``history_days``; ``keys``: per company, its keys
    by label with their text (default: the simulator's own keys); ``network``: its section."""
    scenario: dict[str, Any] = {
        "name": name or f"ingestion-benchmark-{entries}",
        "companies": [
            {
                "name": company,
                "history_days": history_days,
                "entries_per_day": entries / history_days,
                **(
                    {"keys": [{"label": k, "secret": v} for k, v in keys[company].items()]}
                    if keys
                    else {}
                ),
            }
            for company in companies
        ],
    }
    if network:
        scenario["network"] = dict(network)
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")


def _pump(stream: object, lines: queue.Queue[str | None]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.put(line)
    lines.put(None)


def _start(
    command: list[str], workdir: Path, startup_timeout_s: float, *, steered: bool = False
) -> tuple[subprocess.Popen[str], queue.Queue[str | None], str, list[str]]:
    """Starts a simulator process; returns it, its stdout's lines still to come, the URL it
    listens on and the lines it printed before (its banner). Stopped again if it never listens."""
    started = time.perf_counter()
    with (workdir / "simulator.stderr").open("wb") as stderr:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.PIPE if steered else None,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        deadline = started + startup_timeout_s
        banner: list[str] = []
        while True:
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
                return proc, lines, match.group(1), banner
            banner.append(line.rstrip("\n"))
    except BaseException:
        _stop(proc)
        raise


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
    proc, _, base_url, _ = _start(command, workdir, startup_timeout_s)
    company: SimulatedCompany | None = None
    try:
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


@dataclass(frozen=True)
class KeyTraffic:
    """What the simulator answered one key: its own count, not the client's."""

    requests: int = 0
    rate_limited: int = 0  # the limiter's 429s: asked too soon, retried by a well-behaved client
    statuses: dict[int, int] = field(default_factory=dict)

    @property
    def served(self) -> int:
        """Requests that took a token: what the rate allows, so what the floor is made of."""
        return self.requests - self.rate_limited

    @property
    def errors(self) -> int:
        """Answers that were neither a page nor the limiter's 429: none is expected here (the
        benchmarks script no faults), so any is the client asking something wrong."""
        return self.requests - self.statuses.get(200, 0) - self.rate_limited


@dataclass
class SimulatedPlatform:
    """Companies sharing one steered simulator process; ``keys[company][label]`` is a key's text."""

    base_url: str
    keys: dict[str, dict[str, str]]
    first: date
    last: date
    startup_s: float
    network: str  # as the simulator describes what is in force
    _proc: subprocess.Popen[str] = field(repr=False)
    _lines: queue.Queue[str | None] = field(repr=False)
    peak_rss_mb: float = 0.0

    @property
    def companies(self) -> list[str]:
        return list(self.keys)

    @property
    def windows(self) -> list[Window]:
        return windows(self.first, self.last)

    def company(self, name: str, label: str) -> SimulatedCompany:
        """One company as read with one of its keys: what the single-company helpers take."""
        return SimulatedCompany(
            base_url=self.base_url,
            key=self.keys[name][label],
            account=name,
            first=self.first,
            last=self.last,
            windows=self.windows,
            startup_s=self.startup_s,
        )

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self._proc.stdin.flush()
        while True:
            try:
                line = self._lines.get(timeout=60)
            except queue.Empty:
                raise RuntimeError(f"the simulator did not answer {op!r} within 60s") from None
            if line is None:
                raise RuntimeError(f"the simulator exited while asked {op!r}")
            if line.startswith("{"):
                reply: dict[str, Any] = json.loads(line)
                if "error" in reply:
                    raise RuntimeError(f"the simulator refused {op!r}: {reply['error']}")
                return reply

    def traffic(self) -> dict[tuple[str, str], KeyTraffic]:
        """Per (company, key label), since the start or the last ``reset_traffic``."""
        return {
            (k["company"], k["label"]): KeyTraffic(
                k["requests"], k["rate_limited"], {int(s): n for s, n in k["statuses"].items()}
            )
            for k in self.ask("traffic")["keys"]
        }

    def reset_traffic(self) -> None:
        self.ask("reset")

    def advance_days(self, days: int) -> None:
        """The next day(s) appear; the history before them stays as it was served."""
        self.ask("advance", days=days)
        self.last += timedelta(days=days)

    def configure_network(self, spec: Mapping[str, Any]) -> None:
        self.network = str(self.ask("network", spec=dict(spec))["network"])


@contextmanager
def simulated_platform(
    companies: Sequence[str],
    entries: int,
    now: datetime,
    workdir: Path,
    *,
    labels: Sequence[str],
    network: Mapping[str, Any] | None = None,
    history_days: int = HISTORY_DAYS,
    startup_timeout_s: float = 600,
) -> Iterator[SimulatedPlatform]:
    """Starts a steered simulator: every company ``entries`` entries over ``history_days`` up to
    ``now``, a fresh key per company and label, ``network`` (a ``NetworkSpec``'s fields) in force
    from the first request. Stops it after, keeping its peak RSS."""
    workdir.mkdir(parents=True, exist_ok=True)
    keys = {c: {label: f"bench-{secrets.token_hex(12)}" for label in labels} for c in companies}
    scenario = workdir / "scenario.yaml"
    write_scenario(
        scenario,
        entries,
        history_days,
        companies=companies,
        keys=keys,
        network=network,
        name=f"network-benchmark-{len(companies)}x{entries}",
    )
    command = [sys.executable, "-m", "benchmarks.peers.steered_simulator"]
    command += ["--scenario", str(scenario), "--seed", "0", "--now", now.isoformat()]
    started = time.perf_counter()
    proc, lines, base_url, banner = _start(command, workdir, startup_timeout_s, steered=True)
    platform: SimulatedPlatform | None = None
    try:
        last = now.date()
        described = [line.removeprefix("network: ") for line in banner if "network:" in line]
        platform = SimulatedPlatform(
            base_url=base_url,
            keys=keys,
            first=last - timedelta(days=history_days - 1),
            last=last,
            startup_s=time.perf_counter() - started,
            network=described[-1] if described else "unknown",
            _proc=proc,
            _lines=lines,
        )
        yield platform
    finally:
        peak_kb = _stop(proc)
        if platform is not None:
            platform.peak_rss_mb = peak_kb / 1024


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
