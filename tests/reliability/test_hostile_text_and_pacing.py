"""What a hostile server says is shown, never obeyed; when it says to come back, it is believed.

The server of tests/reliability/hostile.py sends a problem whose title and detail carry a newline,
a terminal escape and U+202E, and a 429 whose Retry-After is an HTTP-date (RFC 9110 allows it).
"""

from __future__ import annotations

import os
import subprocess
import time
from email.utils import formatdate
from pathlib import Path

import pytest
from pydantic import SecretStr

from pipelines.api.client import PlatformClient
from pipelines.api.options import ApiSettings
from pipelines.api.retry import parse_retry_after
from tests.pipeline.helpers import cli_in_process
from tests.reliability.hostile import TRANSACTIONS, HostileServer, Reply, Request, problem
from tests.reliability.support import assert_one_clear_error_line

KEY = "sk_live+Hostile/Q7x9Zr2mKp4Lw8Vn=="
ROOT = Path(__file__).resolve().parents[2]
# A title that recolours the terminal, a detail that breaks the line and reverses what follows.
TITLE = "Bad \x1b[31mRequest"
DETAIL = "pageSize too large\nsee the docs\u202etxt.exe"


def sync(server: HostileServer, folder: Path, **variables: str) -> subprocess.CompletedProcess:
    """A user's `creditlens sync` against the hostile server, through the command's entry point."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CREDITLENS_")}
    env.pop("DAGSTER_HOME", None)
    env |= {
        "CREDITLENS_BASE_URL": server.url,
        "CREDITLENS_API_KEY": KEY,
        "CREDITLENS_WAREHOUSE": str(folder / "w.duckdb"),
        "CREDITLENS_REPORTS_DIR": str(folder / "reports"),
        "CREDITLENS_MAX_RETRIES": "0",
        # As tests/conftest.py's runs: a persistent Dagster instance costs a second or more to
        # open, and what is shown of the server's problem does not depend on it.
        "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
        **variables,
    }
    return cli_in_process("sync", env=env, inherit=False, cwd=ROOT)


def test_a_problem_with_newlines_escapes_and_bidi_controls_is_one_escaped_line(
    tmp_path: Path,
) -> None:
    with HostileServer() as hostile:
        hostile.routes[TRANSACTIONS] = lambda r: problem(400, TITLE, DETAIL)
        # No ledger start: the history discovery at the start of the sync meets the problem
        # first; then, with a start, the ledger's own read does.
        discovery = sync(hostile, tmp_path / "discovery")
        window = sync(hostile, tmp_path / "window", CREDITLENS_LEDGER_START="2026-11-20")
    for result in (discovery, window):
        line = assert_one_clear_error_line(result, "400", "pageSize too large")
        assert result.returncode == 1
        for raw in ("\x1b", "\u202e"):
            assert raw not in result.stderr, f"{raw!r} reached the terminal: {result.stderr!r}"
        assert "\\x1b[31mRequest" in line
        assert "pageSize too large\\nsee the docs\\u202etxt.exe" in line


@pytest.mark.slow
def test_retry_after_as_an_http_date_is_waited_out() -> None:
    asked: list[float] = []

    def come_back_later(request: Request) -> Reply:
        asked.append(time.monotonic())
        if len(asked) > 1:
            return Reply(body={"plan": "Growth", "status": "Active", "features": []})
        # Two seconds from now, to the second as HTTP-dates go: a wait of more than one, twenty
        # times the longest backoff the client would otherwise wait.
        when = formatdate(time.time() + 2, usegmt=True)
        reply = problem(429, "Too Many Requests", "slow down")
        return Reply(reply.status, reply.body, {**reply.headers, "Retry-After": when})

    with HostileServer() as hostile:
        hostile.routes["/Subscription"] = come_back_later
        settings = ApiSettings(
            base_url=hostile.url,
            api_key=SecretStr(KEY),
            backoff_base_s=0.01,
            backoff_max_s=0.05,
            max_retries=2,
        )
        client = PlatformClient(settings)
        try:
            client.get_json("/Subscription")
        finally:
            client.close()
    assert len(asked) == 2
    waited = asked[1] - asked[0]
    assert 0.9 < waited < 30, f"asked again after {waited:.2f} s, not at the date given"


def test_retry_after_dates_of_every_http_form_read_as_seconds_until_them() -> None:
    now = 784111777.0 - 5  # five seconds before Sun, 06 Nov 1994 08:49:37 GMT
    for form in (
        "Sun, 06 Nov 1994 08:49:37 GMT",  # IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  # obsolete RFC 850
        "Sun Nov  6 08:49:37 1994",  # obsolete asctime, GMT by definition
    ):
        assert parse_retry_after(form, now=now) == 5.0, form
    assert parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now=now + 60) == 0.0  # past: now
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("soon") == 1.0
