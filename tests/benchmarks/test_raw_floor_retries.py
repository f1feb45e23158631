"""The raw floor runs to its end through a transport error, and says how many it met.

At 64 connections on a busy machine one request in a million meets a reset or a read cut short;
the floor had no retry, and one ``httpx.ReadError`` ended a benchmark after 5.5 minutes. A real
HTTP server here drops the connection of chosen requests without answering them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from benchmarks.peers import raw_floor

TOTAL = 250
WINDOW = "2026-01-01..2026-01-31"


class _Ledger(BaseHTTPRequestHandler):
    """Pages of the ledger endpoint; the first ``drops`` requests for page 2 go unanswered."""

    drops = 0

    def do_GET(self) -> None:
        page = int(parse_qs(urlparse(self.path).query)["pageNumber"][0])
        if page == 2 and type(self).drops > 0:
            type(self).drops -= 1
            self.close_connection = True  # no status line: the client sees a transport error
            return
        count = max(0, min(100, TOTAL - (page - 1) * 100))
        body = json.dumps({"total": TOTAL, "data": [{"createdAt": "x"}] * count}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def ledger_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("BENCH_API_KEY", "floor-key")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ledger)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        _Ledger.drops = 0
        server.shutdown()
        server.server_close()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["threads", "async", "procs"])
def test_a_dropped_connection_is_retried_and_counted(
    ledger_url: str, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _Ledger.drops = 2
    argv = ["--base-url", ledger_url, "--window", WINDOW, "--mode", mode, "--workers", "2"]
    assert raw_floor.main(argv) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["entries"] == TOTAL and figures["pages"] == 3
    assert figures["retries"] == 2


def test_the_retries_are_bounded(ledger_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _Ledger.drops = raw_floor.RETRIES + 1  # one more than the floor tries again
    monkeypatch.setattr(raw_floor, "RETRY_PAUSE_S", 0.01)
    with pytest.raises(httpx.TransportError):
        raw_floor.fetch_threads(ledger_url, "floor-key", [WINDOW], 1, deadline=float("inf"))
