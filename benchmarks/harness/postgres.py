"""A real PostgreSQL server for the lake tests: Debian's binaries, a throwaway cluster under the
temporary folder, on a free loopback port, trust authentication, stopped when the block ends.

Where the binaries are missing the lake tests skip, saying so, unless
CREDITLENS_REQUIRE_POSTGRES=1 (`.ci/run` sets it and installs Debian's `postgresql`): then they
fail. PostgreSQL refuses to run as root, so under root the cluster belongs to the `postgres`
user the Debian package creates, and the server runs as that user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.alerts.receivers import free_port

REQUIRE = "CREDITLENS_REQUIRE_POSTGRES"


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str
    bindir: Path

    def dsn(self, dbname: str) -> str:
        """libpq's key=value form, as DuckLake's ATTACH takes it (no password: trust)."""
        return f"dbname={dbname} host={self.host} port={self.port} user={self.user}"

    def create_database(self, name: str) -> str:
        """A new, empty database; returns its name."""
        subprocess.run(
            [str(self.bindir / "createdb"), "-h", self.host, "-p", str(self.port), "-U", self.user,
             name],
            check=True, capture_output=True, timeout=30,
        )  # fmt: skip
        return name


def _bindir() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(candidate, "postgres").exists() and Path(candidate, "initdb").exists():
            return Path(candidate)
    found = shutil.which("pg_ctl")
    return Path(found).parent if found and Path(found).with_name("postgres").exists() else None


def _as_server_user() -> tuple[list[str], str | None]:
    """The prefix that runs a server command, and the owner its folder needs (None: ourselves)."""
    if os.geteuid() != 0:
        return [], None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return [], None
    return ["runuser", "-u", "postgres", "--"], "postgres"


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but {reason}")
    pytest.skip(reason)


@contextmanager
def running_postgres() -> Iterator[Postgres]:
    bindir = _bindir()
    if bindir is None:
        _unavailable("no PostgreSQL server binaries (Debian's postgresql package)")
        raise AssertionError  # unreachable: skip and fail raise
    prefix, owner = _as_server_user()
    folder = Path(tempfile.mkdtemp(prefix="creditlens-pg-"))
    if owner:
        shutil.chown(folder, owner)
    data, port = folder / "data", free_port()
    run = {"check": True, "capture_output": True, "timeout": 60}
    subprocess.run(
        [*prefix, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
         "-E", "UTF8", "--no-sync"],
        **run,
    )  # fmt: skip
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l",
         str(folder / "log"), "-w", "start"],
        **run,
    )  # fmt: skip
    try:
        server = Postgres("127.0.0.1", port, "postgres", bindir)
        deadline = time.monotonic() + 30
        while subprocess.run(
            [str(bindir / "pg_isready"), "-h", server.host, "-p", str(port)], capture_output=True
        ).returncode:
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL did not start: {(folder / 'log').read_text()}")
            time.sleep(0.1)
        yield server
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True, timeout=60,
        )  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)
