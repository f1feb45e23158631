"""A real PostgreSQL server for the lake's tests and benchmark: Debian's binaries, a throwaway
cluster under the temporary folder, on a free loopback port, trust authentication, stopped when
the block ends.

PostgreSQL refuses to run as root, so under root the cluster belongs to the `postgres` user the
Debian package creates, and the server runs as that user. Where the binaries are missing it
raises PostgresMissing; the tests skip on it, or fail under CREDITLENS_REQUIRE_POSTGRES=1
(tests/lake/conftest.py).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class PostgresMissing(RuntimeError):
    """No PostgreSQL server binaries on this machine (Debian's postgresql package)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def _server_user() -> str | None:
    """Who runs the server: ``postgres`` under root (PostgreSQL refuses root), else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return None
    return "postgres"


@contextmanager
def running_postgres() -> Iterator[Postgres]:
    bindir = _bindir()
    if bindir is None:
        raise PostgresMissing("no PostgreSQL server binaries (Debian's postgresql package)")
    owner = _server_user()
    folder = Path(tempfile.mkdtemp(prefix="creditlens-pg-"))
    if owner:
        shutil.chown(folder, owner, owner)
    # As the server's user (subprocess switches, no runuser or su needed), from its own folder:
    # it may not enter the caller's working directory.
    as_owner: dict[str, Any] = {"cwd": folder}
    if owner:
        as_owner |= {"user": owner, "group": owner, "extra_groups": []}
    data, port = folder / "data", free_port()
    run = {"check": True, "capture_output": True, "timeout": 60, **as_owner}
    subprocess.run(
        [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
         "--no-sync"],
        **run,
    )  # fmt: skip
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"),
         "-w", "start"],
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
            [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True, timeout=60, **as_owner,
        )  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)
