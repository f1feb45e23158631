"""The ASGI app: five read endpoints behind X-Api-Key, /openapi.json, faults and network.

Endpoints are raw ASGI callables under Starlette's router: the ledger is the hot path and answers
with bytes joined from pre-serialized entries, without building a Request object.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from simulator.faults import Fault
from simulator.keys import ApiKey
from simulator.openapi import openapi_document
from simulator.problems import problem, too_many_requests
from simulator.ranges import QueryError, parse_ledger_query
from simulator.traffic import NO_RESPONSE
from simulator.wire import dumps

if TYPE_CHECKING:
    from simulator.core import Simulator

TRANSACTIONS = "/Consumption/transactions"
CONSUMPTION = "/Consumption"
BREAKDOWN = "/Consumption/breakdown"
SUBSCRIPTION = "/Subscription"
CAMPAIGN = "/Campaign"
OPENAPI = "/openapi.json"

ABORT_EXTENSION = "creditlens.abort"
_JSON_HEADER = (b"content-type", b"application/json")


class Call:
    """What a handler needs from a request: its query and its key header."""

    __slots__ = ("query", "secret")

    def __init__(self, scope: Scope) -> None:
        self.query = parse_query(scope["query_string"])
        self.secret: str | None = None
        for name, value in scope["headers"]:
            if name == b"x-api-key":
                self.secret = value.decode("latin-1")
                break


Handler = Callable[[Call], Response | bytes]


def parse_query(raw: bytes) -> dict[str, str]:
    """Like parse_qsl(keep_blank_values=True) (the last value of a name wins), but only
    percent-decodes the parts that need it: this runs on every ledger page."""
    query: dict[str, str] = {}
    if not raw:
        return query
    for part in raw.decode("latin-1").split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        if "%" in part or "+" in part:
            name, value = unquote_plus(name), unquote_plus(value)
        query[name] = value
    return query


class ConnectionReset(Response):
    """Closes the connection without answering (needs `simulator.server`'s protocol)."""

    def __init__(self) -> None:
        super().__init__(b"")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        abort = scope.get("extensions", {}).get(ABORT_EXTENSION)
        if abort is None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            raise ConnectionAbortedError("simulated connection reset")
        abort()
        while (await receive())["type"] != "http.disconnect":
            pass


def _authorize(sim: Simulator, call: Call, path: str, billing: bool) -> ApiKey | Response:
    if not call.secret:
        return problem(401, "The X-Api-Key header is missing.", path)
    key = sim.authenticate(call.secret)
    if key is None:
        return problem(401, "The API key is unknown.", path)
    if key.revoked:
        return problem(401, "The API key has been revoked.", path)
    if billing and key.scope != "full":
        return problem(
            403, "This API key is restricted to campaigns; billing data is not available.", path
        )
    return key


def _as_response(result: Response | bytes) -> Response:
    if isinstance(result, bytes):
        return Response(result, media_type="application/json")
    return result


def _fault_body(fault: Fault) -> bytes:
    if isinstance(fault.body, bytes):
        return fault.body
    if isinstance(fault.body, str):
        return fault.body.encode()
    return dumps(fault.body)


async def _client_left_within(receive: Receive, seconds: float) -> bool:
    """Waits up to `seconds`, returning early (True) when the client hangs up."""

    async def until_disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    try:
        await asyncio.wait_for(until_disconnect(), timeout=seconds)
    except TimeoutError:
        return False
    return True


async def _faulted(
    sim: Simulator, fault: Fault, call: Call, receive: Receive, path: str, handler: Handler
) -> Response:
    kind = fault.kind
    if kind == "429":
        return too_many_requests(path, fault.retry_after)
    if kind in ("500", "502", "503"):
        headers = {"Retry-After": str(fault.retry_after)} if kind == "503" else None
        return problem(int(kind), "The service failed to answer; try again.", path, headers)
    if kind == "reset":
        return ConnectionReset()
    if kind == "body":
        return Response(_fault_body(fault), status_code=fault.status, media_type=fault.content_type)
    if kind == "timeout":
        if await _client_left_within(receive, fault.delay):
            return Response(b"", status_code=499)  # nobody is listening any more
        return _as_response(handler(call))
    if kind == "drift":
        key = _authorize(sim, call, path, billing=True)
        if isinstance(key, ApiKey):
            sim.add_entries_now(key.company, fault.drift_entries)
        return _as_response(handler(call))
    response = _as_response(handler(call))
    whole = bytes(response.body)
    # truncated: cut in half; malformed: garbage right after the first byte, invalid at once
    body = whole[: len(whole) // 2] if kind == "truncated" else whole[:1] + b",<html>" + whole[1:]
    return Response(
        body, status_code=response.status_code, media_type=response.headers["content-type"]
    )


class Endpoint:
    """A raw ASGI endpoint: network, faults, then the handler; bytes go out without a Response.

    The network's latency is one round trip, half before the request "arrives" (so the rate
    limiter sees arrival times) and half on the way back; both halves are `asyncio.sleep`, so
    concurrent requests overlap instead of queueing. Auth comes before the limiter: a missing,
    unknown or revoked key is answered as before (401) and never touches a bucket, so a client
    with a bad key learns that rather than being told to wait. A refused request is answered
    with the same 429 as the "429" fault and consumes no fault. `limited=False` (the OpenAPI
    document, which needs no key) skips the limiter but not the latency: it is a round trip too.
    """

    def __init__(
        self,
        sim: Simulator,
        path: str,
        handler: Handler,
        faulty: bool = True,
        limited: bool = True,
    ) -> None:
        self.sim = sim
        self.path = path
        self.handler = handler
        self.faulty = faulty
        self.limited = limited

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = Call(scope)
        sim = self.sim
        network = sim.network
        key = sim.authenticate(call.secret) if call.secret else None
        half_trip = network.latency_s() / 2 if network.has_latency else 0.0
        if half_trip:
            await asyncio.sleep(half_trip)
        extra_headers: list[tuple[bytes, bytes]] = []
        if self.limited and key is not None and not key.revoked:
            admission = network.admit(key.secret)
            if admission is not None:
                if network.rate_limit_headers:
                    extra_headers = admission.header_pairs()
                if not admission.allowed:
                    sim.traffic.record(key, 429, rate_limited=True)
                    refused = too_many_requests(self.path, admission.retry_after_s)
                    await _send(refused, extra_headers, half_trip, scope, receive, send)
                    return
        fault = sim.faults.pick(self.path, call.query) if self.faulty else None
        if fault is not None:
            result: Response | bytes = await _faulted(
                sim, fault, call, receive, self.path, self.handler
            )
        else:
            result = self.handler(call)
        if isinstance(result, bytes):
            status = 200
        elif isinstance(result, ConnectionReset):
            status = NO_RESPONSE
        else:
            status = result.status_code
        sim.traffic.record(key, status)
        await _send(result, extra_headers, half_trip, scope, receive, send)


async def _send(
    result: Response | bytes,
    extra_headers: list[tuple[bytes, bytes]],
    delay: float,
    scope: Scope,
    receive: Receive,
    send: Send,
) -> None:
    """Answers after `delay` seconds (the way back); JSON bytes go out without a Response."""
    if delay:
        await asyncio.sleep(delay)
    if isinstance(result, bytes):
        headers = [_JSON_HEADER, (b"content-length", str(len(result)).encode()), *extra_headers]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": result})
        return
    if extra_headers:
        result.raw_headers.extend(extra_headers)
    await result(scope, receive, send)


# The simulator's controls (simulator/README.md): not part of the platform's API.
ADMIN = "/_simulator"
ADMIN_CLOCK = f"{ADMIN}/clock"
ADMIN_TOP_UP = f"{ADMIN}/top-up"


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def build_app(sim: Simulator) -> Starlette:
    scenario = sim.scenario
    openapi_bytes = dumps(openapi_document(scenario))
    names = scenario.range_params
    range_format = scenario.range_format

    def transactions(call: Call) -> Response | bytes:
        key = _authorize(sim, call, TRANSACTIONS, billing=True)
        if not isinstance(key, ApiKey):
            return key
        try:
            query = parse_ledger_query(call.query, names, range_format)
        except QueryError as error:
            return problem(400, error.detail, TRANSACTIONS, errors=error.errors)
        return sim.ledger_page(key.company, query)

    def snapshot(path: str, read: Callable[[str], Any], billing: bool) -> Handler:
        def handler(call: Call) -> Response | bytes:
            key = _authorize(sim, call, path, billing=billing)
            if not isinstance(key, ApiKey):
                return key
            return dumps(read(key.company))

        return handler

    def openapi(call: Call) -> bytes:
        return openapi_bytes

    def route(path: str, handler: Handler, faulty: bool = True) -> Route:
        # The API proper is faulted and rate-limited; /openapi.json neither (it needs no key).
        return Route(path, Endpoint(sim, path, handler, faulty, limited=faulty), methods=["GET"])

    async def admin(request: Request) -> Response:
        """The simulator's own controls (never the platform's API), for whoever runs it on this
        machine: move the clock forward (``hours``), post a top-up (``company``, ``amount``).
        Loopback clients only; the past is never rewritten."""
        client = request.client.host if request.client else ""
        if not _loopback(client):
            return problem(403, "The simulator's controls answer loopback clients only.", ADMIN)
        query = request.query_params
        try:
            if request.url.path == ADMIN_CLOCK:
                hours = float(query.get("hours", "nan"))
                if not 0 < hours <= 24 * 366:
                    raise ValueError("hours: a number of hours to move forward, 0 to 8784")
                later = sim.clock.now + timedelta(hours=hours)
                if later > datetime.now(UTC):
                    raise ValueError(
                        f"the clock would pass the real now (it is {sim.clock.now.isoformat()}): "
                        "a client syncs up to today only, so nothing may happen later"
                    )
                sim.clock.advance(timedelta(hours=hours))
            else:
                amount = Decimal(query.get("amount", ""))
                sim.top_up_now(query.get("company", ""), amount)
        except (ValueError, ArithmeticError, KeyError) as error:
            return problem(400, str(error).strip("'\""), request.url.path)
        return Response(dumps({"now": sim.clock.now.isoformat()}), media_type="application/json")

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        headers: Mapping[str, str] | None = exc.headers
        return problem(exc.status_code, str(exc.detail), request.url.path, dict(headers or {}))

    async def server_error(request: Request, exc: Exception) -> Response:
        return problem(500, "Unexpected error.", request.url.path)

    return Starlette(
        routes=[
            route(TRANSACTIONS, transactions),
            route(BREAKDOWN, snapshot(BREAKDOWN, sim.breakdown, billing=True)),
            route(CONSUMPTION, snapshot(CONSUMPTION, sim.consumption, billing=True)),
            route(SUBSCRIPTION, snapshot(SUBSCRIPTION, sim.subscription, billing=True)),
            route(CAMPAIGN, snapshot(CAMPAIGN, sim.campaigns, billing=False)),
            route(OPENAPI, openapi, faulty=False),  # clients load it once to learn the wire,
            Route(ADMIN_CLOCK, admin, methods=["POST"]),
            Route(ADMIN_TOP_UP, admin, methods=["POST"]),
        ],
        exception_handlers={HTTPException: http_error, Exception: server_error},
    )
