"""Every configuration mistake a user can make gives one line naming it, never a traceback.

Each case runs `creditlens sync` with a working configuration (a real simulator, a fresh
warehouse) except for the one thing that is wrong. One case, the one that gets furthest (all the
way to its first request), runs as a user's shell would, `python -m pipelines.cli sync` in a child
process, proving what reaches a real stderr; the others through the same entry point in-process
(the same parsing, output and exit code, without a fresh interpreter's seconds of imports each),
while the child runs. Of the bad flags below, one runs as a child process too (what a pipe gets
from click's usage error), the others in-process the same way.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from simulator import Simulator, serve
from tests.pipeline.helpers import cli_in_process
from tests.reliability.support import assert_one_clear_error_line, cli_logged


def case(id: str, env: dict[str, str | None], args: tuple[str, ...], *named: str, bug: str = ""):  # type: ignore[no-untyped-def]
    """One mistake: environment changes (None unsets), extra arguments, what the line names."""
    marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
    return pytest.param(id, env, args, named, id=id, marks=marks)


CASES = [
    case("missing-key", {"CREDITLENS_API_KEY": None}, (), "CREDITLENS_API_KEY"),
    case("bad-base-url", {"CREDITLENS_BASE_URL": "ftp://127.0.0.1/"}, (), "CREDITLENS_BASE_URL"),
    case(
        "unwritable-warehouse",
        {"CREDITLENS_WAREHOUSE": "{tmp}/a-file/warehouse.duckdb"},
        (),
        "CREDITLENS_WAREHOUSE",
        "a-file",
    ),
    case(
        "since-after-until", {}, ("--since", "{today}", "--until", "{first}"), "--since", "--until"
    ),
    case(
        "bad-ledger-start",
        {"CREDITLENS_LEDGER_START": "2025-13-01"},
        (),
        "CREDITLENS_LEDGER_START",
        "2025-13-01",
    ),
    case(
        "bad-sign-convention",
        {"CREDITLENS_SIGN_CONVENTION": "sideways"},
        (),
        "CREDITLENS_SIGN_CONVENTION",
        "sideways",
    ),
    case("bad-timeout", {"CREDITLENS_TIMEOUT": "soon"}, (), "CREDITLENS_TIMEOUT"),
    case("bad-processes", {"CREDITLENS_PROCESSES": "0"}, (), "CREDITLENS_PROCESSES"),
    case(
        "bad-slice-entries",
        {"CREDITLENS_RECONCILE_SLICE_ENTRIES": "lots"},
        (),
        "CREDITLENS_RECONCILE_SLICE_ENTRIES",
        "lots",
    ),
    case(
        "nothing-listening",
        {"CREDITLENS_BASE_URL": "http://127.0.0.1:{port}"},
        (),
        "127.0.0.1:{port}",
        "no response",
    ),
]


# The case run as a child process: it builds everything a sync builds before its first request.
IN_A_CHILD = "nothing-listening"


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """Runs every case against one simulator; maps case id to (result, values)."""
    sim = Simulator("small")
    company = sim.companies[0].name
    first = sim.clock.now.date().toordinal() - sim.scenario.company(company).history_days + 1
    with serve(sim) as server:
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("CREDITLENS_") and k != "DAGSTER_HOME"
        }
        results: dict[str, object] = {}

        # Made here, not in the child's thread: the factory's first call sets up its base
        # folder, and two threads doing that at once can remove each other's folders.
        folders = {param.values[0]: tmp_path_factory.mktemp(param.values[0]) for param in CASES}

        def run(param) -> None:  # type: ignore[no-untyped-def]
            id, env, args, _named = param.values
            tmp = folders[id]
            (tmp / "a-file").write_text("not a directory\n")
            values = {
                "tmp": str(tmp),
                "today": sim.clock.now.date().isoformat(),
                "first": type(sim.clock.now.date()).fromordinal(first).isoformat(),
                "port": str(_closed_port()),
            }
            environ = {
                **base,
                "CREDITLENS_BASE_URL": server.url,
                "CREDITLENS_API_KEY": "demo-key",
                "CREDITLENS_ACCOUNT": company,
                "CREDITLENS_WAREHOUSE": str(tmp / "warehouse.duckdb"),
                "CREDITLENS_LEDGER_START": values["first"],
                "CREDITLENS_MAX_RETRIES": "1",
                "CREDITLENS_BACKOFF_BASE_S": "0.01",
                # As tests/conftest.py's runs: a persistent Dagster instance costs seconds to
                # open (a sync opens it to record its history search, before it checks --since
                # against --until), and no case here is about it.
                "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
            }
            for name, value in env.items():
                if value is None:
                    environ.pop(name, None)
                else:
                    environ[name] = value.format(**values)
            argv = ("sync", *(a.format(**values) for a in args))
            if id != IN_A_CHILD:
                results[id] = (cli_logged(*argv, env=environ, inherit=False), values)
                return
            result = subprocess.run(
                [sys.executable, "-m", "pipelines.cli", *argv],
                env=environ,
                capture_output=True,
                text=True,
                timeout=300,
            )
            results[id] = (result, values)

        # The child in a thread of its own (its environment is its own, passed whole), the
        # in-process cases one after another meanwhile: each sets this process's environment.
        child = next(param for param in CASES if param.values[0] == IN_A_CHILD)
        thread = threading.Thread(target=run, args=(child,))
        thread.start()
        for param in CASES:
            if param is not child:
                run(param)
        thread.join()
        yield results


@pytest.mark.slow
@pytest.mark.parametrize(("id", "env", "args", "named"), CASES)
def test_a_configuration_error_is_one_clear_line(
    outcomes: dict[str, tuple[subprocess.CompletedProcess, dict[str, str]]],
    id: str,
    env: dict[str, str | None],
    args: tuple[str, ...],
    named: tuple[str, ...],
) -> None:
    result, values = outcomes[id]
    assert_one_clear_error_line(result, *(n.format(**values) for n in named))


BAD_FLAG_IN_A_CHILD = ("audit", "--bogus")


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [BAD_FLAG_IN_A_CHILD, ("sync", "--since"), ("report", "--month"), ("nonsense",)],
    ids=["unknown-option", "missing-value", "missing-month", "unknown-command"],
)
def test_a_bad_flag_is_one_clear_line_and_exit_2(args: tuple[str, ...]) -> None:
    """Usage errors too: CI logs and pipes get one line, not click's framed usage box. The
    first in a real process, as a pipe receives it; the others through the same entry point
    in-process (the same parsing, streams and exit code, without an interpreter each)."""
    if args == BAD_FLAG_IN_A_CHILD:
        result = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True
        )
    else:
        result = cli_in_process(*args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("creditlens: error: "), result.stderr
    assert "Traceback" not in result.stderr and not result.stdout
