"""Running one contender as a child process: its wall time, exit status and peak memory.

Peak RSS is taken two ways and the larger kept: the kernel's own high-water mark of the child
(``wait4``'s ``ru_maxrss``, exact but per process) and the sum of the RSS of the child's whole
process tree, sampled from /proc (catches helpers running side by side). Every child runs in its
own session, so a timeout kills its whole group and nothing else.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SAMPLE_EVERY_S = 0.05
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


class ChildTimeout(RuntimeError):
    """A contender ran past its time bound and was killed.

    Like ``ChildOverMemory``, what it had taken by then is still a figure: a contender run beside
    another under a wall-time budget (the dlt peer on a rate-limited network) is stopped, and its
    time so far is a lower bound.
    """

    def __init__(self, message: str, wall_s: float = 0.0, peak_rss_mb: float = 0.0) -> None:
        super().__init__(message)
        self.wall_s = wall_s
        self.peak_rss_mb = peak_rss_mb


class ChildOverMemory(RuntimeError):
    """A contender's process tree grew past its memory bound and was killed.

    What it had taken by then is still a figure: a lower bound on its time.
    """

    def __init__(self, name: str, wall_s: float, peak_rss_mb: float, limit_mb: float) -> None:
        super().__init__(
            f"{name} grew past {limit_mb:.0f} MB ({peak_rss_mb:.0f} MB) after {wall_s:.1f}s; killed"
        )
        self.wall_s = wall_s
        self.peak_rss_mb = peak_rss_mb
        self.limit_mb = limit_mb


@dataclass(frozen=True)
class ChildRun:
    command: tuple[str, ...]
    returncode: int
    wall_s: float
    peak_rss_mb: float  # the larger of the two below
    kernel_peak_rss_mb: float  # wait4's ru_maxrss: the largest single process of the tree
    tree_peak_rss_mb: float  # sampled sum over the process tree
    stdout: str
    stderr: str

    def check(self, what: str) -> ChildRun:
        if self.returncode != 0:
            tail = "\n".join(self.stderr.strip().splitlines()[-15:])
            raise RuntimeError(f"{what} failed with exit code {self.returncode}:\n{tail}")
        return self


def _parent(pid: int) -> int | None:
    """``pid``'s parent, None once it has exited."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    return int(text[text.rfind(b")") + 2 :].split()[1])


def _rss_kb(pid: int) -> int:
    """``pid``'s resident set (statm's second field, what status calls VmRSS), 0 once gone."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * PAGE_KB
    except (OSError, ValueError, IndexError):
        return 0


class ProcessTree:
    """The processes under ``root``, sampled again and again while it runs.

    A process's parent is read once, when it first appears: it changes only when the parent
    exits (the process then goes to a reaper, read again then), and a pid is not reused within
    one sampling interval. So a sample lists /proc and reads the tree's own processes, not the
    stat of every process on a shared machine (2.5 ms a sample there, 5% of a core at 20 Hz,
    taken from the contender measured beside it).
    """

    def __init__(self, root: int) -> None:
        self.root = root
        self._parents: dict[int, int] = {}

    def rss_kb(self) -> int:
        """Current RSS of ``root`` and all its descendants, in KiB."""
        alive = {int(name) for name in os.listdir("/proc") if name.isdigit()}
        known = self._parents
        parents: dict[int, int] = {}
        for pid in alive:
            parent = known.get(pid)
            if parent is None or parent not in alive:  # new, or its parent has exited since
                parent = _parent(pid)
            if parent is not None:
                parents[pid] = parent
        self._parents = parents
        children: dict[int, list[int]] = {}
        for pid, parent in parents.items():
            children.setdefault(parent, []).append(pid)
        total, todo = 0, [self.root]
        while todo:
            pid = todo.pop()
            total += _rss_kb(pid)
            todo.extend(children.get(pid, ()))
        return total


def tree_rss_kb(root: int) -> int:
    """Current RSS of ``root`` and all its descendants, in KiB (one sample)."""
    return ProcessTree(root).rss_kb()


def run_child(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
    log_dir: Path,
    name: str,
    max_rss_mb: float | None = None,
) -> ChildRun:
    """Runs ``command`` to completion (or kills it at ``timeout_s``, or once its process tree
    holds more than ``max_rss_mb``: a shared machine must survive a contender), measuring it."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = log_dir / f"{name}.stdout", log_dir / f"{name}.stderr"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            list(command), env=dict(env), cwd=cwd, stdout=out, stderr=err, start_new_session=True
        )
        tree = ProcessTree(proc.pid)
        tree_kb = kernel_kb = 0
        deadline = started + timeout_s
        try:
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid == proc.pid:
                    wall = time.perf_counter() - started
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    kernel_kb = usage.ru_maxrss
                    break
                tree_kb = max(tree_kb, tree.rss_kb())
                if max_rss_mb is not None and tree_kb / 1024 > max_rss_mb:
                    wall = time.perf_counter() - started
                    raise ChildOverMemory(name, wall, tree_kb / 1024, max_rss_mb)
                if time.perf_counter() > deadline:
                    raise ChildTimeout(
                        f"{name} still running after {timeout_s:.0f}s; killed",
                        wall_s=time.perf_counter() - started,
                        peak_rss_mb=tree_kb / 1024,
                    )
                time.sleep(SAMPLE_EVERY_S)
        finally:
            if proc.returncode is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return ChildRun(
        command=tuple(command),
        returncode=proc.returncode,
        wall_s=wall,
        peak_rss_mb=max(kernel_kb, tree_kb) / 1024,
        kernel_peak_rss_mb=kernel_kb / 1024,
        tree_peak_rss_mb=tree_kb / 1024,
        stdout=out_path.read_text(errors="replace"),
        stderr=err_path.read_text(errors="replace"),
    )
