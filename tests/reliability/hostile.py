"""A hostile upstream: a small HTTP server of its own, not the simulator.

The simulator is faithful by design, so it cannot say what creditlens does when the platform is
broken or malicious. This server answers the five billing paths with whatever a test scripts,
down to the bytes and their pace: raw JSON text a JSON library would refuse to write (lone
surrogates, non-ASCII digits, 1e400), pages that repeat, headers trickled a byte a second, gzip
bombs. It shares no code with the simulator or with creditlens, so neither side's reading of the
spec can hide the other's mistakes.

Usage::

    with HostileServer() as hostile:
        hostile.entries = [entry(...), ...]          # raw JSON objects, one text each
        hostile.routes["/Consumption"] = lambda r: Reply(body=b'{"balance": 1e400}')
        ... point CREDITLENS_BASE_URL at hostile.url ...

Every route not overridden answers a small valid company: the ledger from ``entries`` (filtered
by the inclusive UTC day range, paged as the spec says), and valid snapshots.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TRANSACTIONS = "/Consumption/transactions"
CONSUMPTION = "/Consumption"
BREAKDOWN = "/Consumption/breakdown"
SUBSCRIPTION = "/Subscription"
CAMPAIGN = "/Campaign"


@dataclass(frozen=True)
class Request:
    """One request as received: path, the query's single values, headers (lower-case names)."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class Reply:
    """What to send back. ``body`` bytes go out as they are; anything else is dumped as JSON.

    ``trickle_s`` > 0 sends the status line, headers and body one byte at a time with that pause
    between bytes (slowloris); ``gzip`` compresses the body and says so in Content-Encoding.
    """

    status: int = 200
    body: bytes | Any = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    trickle_s: float = 0.0
    gzip: bool = False

    def payload(self) -> bytes:
        data = self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()
        return gzip.compress(data) if self.gzip else data


Handler = Callable[[Request], Reply]


def entry(
    created_at: str,
    amount: str,
    balance_after: str,
    *,
    type_: str = "Usage",
    description: str = "Call",
    channel: str | None = "Phone",
    agent_id: str | None = "agt_1",
    campaign_id: str | None = "cmp_1",
    **raw_fields: str,
) -> str:
    """One ledger entry as raw JSON text. ``amount`` and ``balance_after`` are JSON text too
    (``"12.5"`` is a number, ``'"12.5"'`` a string), so a test can send any grammar; extra
    ``raw_fields`` are name -> raw JSON text."""
    parts = {
        "createdAt": json.dumps(created_at),
        "type": json.dumps(type_),
        "amount": amount,
        "description": json.dumps(description),
        "hasDescription": "true" if description else "false",
        "channel": json.dumps(channel),
        "agentId": json.dumps(agent_id),
        "campaignId": json.dumps(campaign_id),
        "balanceAfter": balance_after,
        **raw_fields,
    }
    return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in parts.items()) + "}"


def problem(status: int, title: str, detail: str) -> Reply:
    """An RFC 9457 problem details answer, as the platform sends its errors."""
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    return Reply(status, body, {"Content-Type": "application/problem+json"})


class HostileServer:
    """Serves the billing paths on loopback from a thread; scripted by its attributes."""

    def __init__(self) -> None:
        self.entries: list[str] = []
        self.balance = "0"
        self.routes: dict[str, Handler] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # Polled for shutdown every 20 ms, not socketserver's 0.5 s: each test stops its server,
        # and would otherwise wait up to half a second for the loop to notice.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # the valid company every route falls back to ------------------------------------------

    def answer(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            handler = self.routes.get(request.path)
        if handler is not None:
            return handler(request)
        return self.default(request)

    def default(self, request: Request) -> Reply:
        if request.path == TRANSACTIONS:
            return self.ledger_page(request)
        if request.path == CONSUMPTION:
            body = (
                '{"balance":' + self.balance + ',"creditsUsed":0,"creditsIncluded":10000,'
                '"periodStart":"2026-11-01T00:00:00Z","periodEnd":"2026-12-01T00:00:00Z",'
                '"asOf":"2026-11-23T00:00:00Z"}'
            )
            return Reply(body=body.encode())
        if request.path == BREAKDOWN:
            return Reply(
                body={
                    "periodStart": "2026-11-01T00:00:00Z",
                    "periodEnd": "2026-12-01T00:00:00Z",
                    "items": [],
                }
            )
        if request.path == SUBSCRIPTION:
            return Reply(
                body={
                    "plan": "Growth",
                    "status": "Active",
                    "features": [],
                    "limits": {"monthlyCredits": 10000, "agents": 20, "concurrentCalls": 10},
                    "currentPeriodStart": "2026-11-01T00:00:00Z",
                    "currentPeriodEnd": "2026-12-01T00:00:00Z",
                }
            )
        if request.path == CAMPAIGN:
            return Reply(body=[{"id": "cmp_1", "name": "Winter renewals"}])
        return problem(404, "Not Found", f"no route {request.path}")

    def ledger_page(self, request: Request) -> Reply:
        """``entries`` whose createdAt day lies in the inclusive startDate..endDate range, in
        the order given, paged by pageNumber and pageSize."""
        try:
            first = date.fromisoformat(request.query["startDate"][:10])
            last = date.fromisoformat(request.query["endDate"][:10])
            number = int(request.query.get("pageNumber", "1"))
            size = int(request.query.get("pageSize", "10"))
        except (KeyError, ValueError) as exc:
            return problem(400, "Bad Request", f"bad range or paging: {exc}")
        chosen = [e for e in self.entries if first <= _day_of(e) <= last]
        page = chosen[(number - 1) * size : number * size]
        body = (
            '{"data":[' + ",".join(page) + f'],"total":{len(chosen)},'
            f'"pageNumber":{number},"pageSize":{size}}}'
        )
        return Reply(body=body.encode())

    # the wire -------------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handle(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = server.answer(Request(parts.path, query, headers))
                payload = reply.payload()
                head = [f"HTTP/1.1 {reply.status} {_reason(reply.status)}"]
                sent = {k.lower() for k in reply.headers}
                if "content-type" not in sent:
                    head.append("Content-Type: application/json")
                if "content-length" not in sent:
                    head.append(f"Content-Length: {len(payload)}")
                if reply.gzip:
                    head.append("Content-Encoding: gzip")
                head += [f"{k}: {v}" for k, v in reply.headers.items()]
                raw = ("\r\n".join(head) + "\r\n\r\n").encode() + payload
                try:
                    if reply.trickle_s > 0:
                        for index in range(len(raw)):
                            self.wfile.write(raw[index : index + 1])
                            self.wfile.flush()
                            time.sleep(reply.trickle_s)
                    else:
                        self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests read ``requests`` instead."""

        return Handle


def _day_of(raw_entry: str) -> date:
    created = json.loads(raw_entry, parse_constant=lambda _: 0, parse_float=str)["createdAt"]
    text = str(created)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).date()
    except ValueError:
        return date.fromisoformat(text[:10])


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"
