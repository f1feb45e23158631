"""Real `creditlens` processes to kill, without an interpreter's seconds of imports each.

A kill proves something only of a process of its own: SIGKILL leaves no cleanup, no atexit, no
flushed buffer, as a power cut. But each fresh interpreter spends ~2 CPU-seconds importing Dagster
and the definitions before its first request, and the kills never land there (they land after a
ledger request or at a failpoint). So one server process imports what a sync imports, once, and
forks a new process per command: each fork is a whole process with its own memory, file
descriptors and locks, running the command's own entry point (``pipelines.cli.entry.run``, all
``python -m pipelines.cli`` does) with its own environment and arguments, killed and reaped like
any other. The server holds no thread of its own when it forks (it only imported), so nothing a
fork inherits is half-held.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Imports what a sync imports, then forks one process per request line (JSON: args, env, log),
# answering with the fork's pid, then with its exit code as subprocess reports one (-9: killed).
# A fork leaves the loop as a `creditlens` process ends (pipelines/runtime/process_exit.py).
SERVER = """
import json, os, sys
from pipelines.cli.entry import run
import pipelines.cli.sync_command
print("ready", flush=True)
for line in sys.stdin:
    asked = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.environ.clear()
        os.environ.update(asked["env"])
        sys.argv = ["creditlens", *asked["args"]]
        log = os.open(asked["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        run()  # exits as `python -m pipelines.cli` does: atexit, flushed streams, its code
    print(pid, flush=True)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


class ForkServer:
    """Starts `creditlens ARGS` processes, one at a time, forked from a warm interpreter."""

    def __init__(self, logs: Path) -> None:
        self._logs = logs
        self._started = 0
        self._last: Forked | None = None
        self._buffer = b""
        self._server = subprocess.Popen(
            [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self._line(timeout=300) == "ready", "the fork server did not start"

    def start(self, *args: str, env: dict[str, str]) -> Forked:
        """`creditlens ARGS` in a new process with exactly ``env``. One runs at a time: one a
        failed test left running is killed and reaped first, so its exit code is not read as
        the next one's pid."""
        if self._last is not None and self._last.returncode is None:
            self._last.kill()
            self._last.wait(timeout=60)
        self._started += 1
        log = self._logs / f"command-{self._started}.log"
        asked = {"args": list(args), "env": env, "log": str(log)}
        assert self._server.stdin is not None
        self._server.stdin.write((json.dumps(asked) + "\n").encode())
        self._server.stdin.flush()
        pid = self._line(timeout=60)
        assert pid is not None, "the fork server did not fork"
        self._last: Forked | None = Forked(self, int(pid), log)
        return self._last

    def _line(self, timeout: float | None) -> str | None:
        """The server's next line, or None if none came within ``timeout`` seconds."""
        assert self._server.stdout is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._server.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self._server.stdout.fileno(), 4096)
            if not chunk:
                raise RuntimeError(f"the fork server exited ({self._server.wait()})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def close(self) -> None:
        assert self._server.stdin is not None
        self._server.stdin.close()
        try:
            self._server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()


class Forked:
    """One forked command: its pid, its exit code once it ended, and what it printed."""

    def __init__(self, server: ForkServer, pid: int, log: Path) -> None:
        self._server = server
        self.pid = pid
        self.log = log
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            line = self._server._line(timeout=0)
            self.returncode = None if line is None else int(line)
        return self.returncode

    def wait(self, timeout: float) -> int:
        if self.returncode is None:
            line = self._server._line(timeout)
            if line is None:
                self.kill()
                line = self._server._line(None)
                raise TimeoutError(f"creditlens ran past {timeout}s: {self.output[-2000:]}")
            self.returncode = int(line)
        return self.returncode

    def kill(self) -> None:
        """SIGKILL, unless it already ended (and was reaped: its pid may be another's by now)."""
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)

    @property
    def output(self) -> str:
        """Its stdout and stderr, as one stream in the order written."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""


_fork_servers: list[ForkServer] = []


def fork_server(tmp_path_factory: pytest.TempPathFactory) -> ForkServer:
    """The one fork server of this test process, started by the first test that kills a
    `creditlens` process: each kill is then a process of its own without a fresh interpreter's
    seconds of imports, and every file that kills shares the server's."""
    if not _fork_servers:
        # Started from whichever test asks first: none of that test's variables is left in the
        # server (each fork gets exactly the environment it is given anyway).
        with pytest.MonkeyPatch.context() as monkeypatch:
            for name in list(os.environ):
                if name.startswith("CREDITLENS_") or name == "DAGSTER_HOME":
                    monkeypatch.delenv(name)
            _fork_servers.append(ForkServer(tmp_path_factory.mktemp("killed-commands")))
        atexit.register(_fork_servers[0].close)
    return _fork_servers[0]
