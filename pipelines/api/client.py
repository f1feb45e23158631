"""The one client that speaks HTTP to the platform.

Why one: retries, problem details, key handling and exact decimals are decided here once, so
the pipeline, the audit and the demo cannot disagree about them. Every request takes a turn from
its key's limiter and its host's gate (pipelines/api/pacing.py) before it is sent, and gives it
back with what came of it: how many run at once is decided there, for every client of the key.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Protocol, TypeVar

import httpx

from pipelines.api.body import ACCEPT_ENCODING, read_capped
from pipelines.api.deadline import Deadline, deadline_transport, request_deadline
from pipelines.api.environment import env_name
from pipelines.api.errors import (
    ApiError,
    DeadlineExceeded,
    MalformedResponse,
    ProblemError,
    RateLimited,
    RequestDeadlineExceeded,
    TransportFailure,
    problem_class,
)
from pipelines.api.json_text import JsonNumber
from pipelines.api.options import ApiSettings
from pipelines.api.pacing import Outcome, host_gate_for, limiter_for
from pipelines.api.redact import Redactor
from pipelines.api.retry import (
    RETRY_AFTER_CAP_S,
    THROTTLED_RETRIES,
    Backoff,
    is_pacing,
    parse_retry_after,
)

log = logging.getLogger(__name__)

USER_AGENT = "creditlens/0.1"
T = TypeVar("T")


class Tally(Protocol):
    """Counters of one task (a ledger window) on a client that other tasks share at the same
    time: the client's own counters mix every window being read."""

    requests: int
    retries: int
    throttled: int


class PlatformClient:
    """A thread-safe client bound to one company's key (pages may be fetched concurrently)."""

    def __init__(
        self,
        settings: ApiSettings,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Any = time.sleep,
    ) -> None:
        self.settings = settings
        self._sleep = sleep
        self._backoff = Backoff(settings.backoff_base_s, settings.backoff_max_s)
        self.requests_sent = 0
        self.retries = 0
        self.throttled = 0  # 429s answered to this client, each absorbed by waiting, not failing
        self._counting = threading.Lock()
        key = settings.api_key.get_secret_value()
        self._redactor = Redactor([key])
        self.limiter = limiter_for(
            settings.base_url, key, settings.concurrency, settings.max_concurrency
        )
        self._host = host_gate_for(settings.base_url, settings.host_concurrency)
        # A connection for every request the limiter may let out, so none waits in httpx's pool
        # (that wait would read as the server's latency).
        size = max(4, settings.max_concurrency)
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        self._http = httpx.Client(
            base_url=settings.base_url,
            headers={
                "X-Api-Key": settings.api_key.get_secret_value(),
                "User-Agent": USER_AGENT,
                "Accept-Encoding": ACCEPT_ENCODING,
            },
            timeout=httpx.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
            limits=limits,
            transport=transport or deadline_transport(limits),
        )

    def __repr__(self) -> str:
        return f"PlatformClient(base_url={self.settings.base_url!r}, api_key='**********')"

    def __enter__(self) -> PlatformClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @property
    def concurrency_level(self) -> int:
        """Requests of this key allowed in flight now (the key's limiter, shared in-process)."""
        return self.limiter.level

    @property
    def peak_concurrency(self) -> int:
        """The highest level the key's limiter has reached in this process."""
        return self.limiter.peak

    def _count(self, tally: Tally | None, name: str) -> None:
        with self._counting:
            setattr(self, _CLIENT_COUNTER[name], getattr(self, _CLIENT_COUNTER[name]) + 1)
            if tally is not None:
                setattr(tally, name, getattr(tally, name) + 1)

    # -- raw requests -------------------------------------------------------------------------

    def get_bytes(self, path: str, params: dict[str, Any] | None = None) -> bytes:
        """GET with retries; returns the body of a 2xx, raises an ApiError otherwise."""
        return self.get(path, params, lambda body: body)

    def get(
        self,
        path: str,
        params: dict[str, Any] | None,
        parse: Callable[[bytes], T],
        *,
        deadline: Deadline | None = None,
        tally: Tally | None = None,
    ) -> T:
        """GET and parse, retrying both: a truncated or malformed body is as transient as a 503.

        ``deadline``: when the caller's whole task (a ledger window) must be done; no request
        runs past it and no retry starts after it. ``tally``: the task's own counters. A 429
        with Retry-After is waited out, not counted as a failure (see pipelines/api/retry.py).
        """
        failures = throttled = 0
        while True:
            try:
                return parse(self._get_once(path, params, deadline, tally))
            except ApiError as exc:
                if not exc.retryable:
                    raise
                if deadline is not None and deadline.left() <= 0:
                    raise DeadlineExceeded(deadline.message(exc)) from None
                retry_after = exc.retry_after if isinstance(exc, ProblemError) else None
                if self.settings.max_retries and _paced(exc):
                    throttled += 1
                    if throttled > THROTTLED_RETRIES:
                        raise
                    # The key's shared pause holds this request's turn too; sleeping it here
                    # keeps the wait visible (and replaceable) like any other retry's.
                    wait = max(
                        min(retry_after or 0.0, RETRY_AFTER_CAP_S), self.limiter.pause_left()
                    )
                else:
                    failures += 1
                    if failures > self.settings.max_retries:
                        raise
                    wait = self._backoff.delay(failures, retry_after)
                if deadline is not None and wait >= deadline.left():
                    raise DeadlineExceeded(deadline.message(exc)) from None
                self._count(tally, "retries")
                log.info(
                    "retrying %s after %s (attempt %d, %.2fs)",
                    path,
                    exc,
                    failures + throttled,
                    wait,
                )
                self._sleep(wait)

    def _get_once(
        self,
        path: str,
        params: dict[str, Any] | None,
        deadline: Deadline | None = None,
        tally: Tally | None = None,
    ) -> bytes:
        until = None if deadline is None else deadline.at
        # A client that retries nothing waits for nothing either (pipelines/api/retry.py).
        ticket = self.limiter.acquire(until) if self.settings.max_retries else self.limiter.enter()
        if ticket is None:
            raise _turn_not_given(deadline, "the key's")
        if not self._host.acquire(until):
            self.limiter.release(ticket, Outcome.UNSENT)
            raise _turn_not_given(deadline, "the host's")
        outcome, retry_after = Outcome.FAILED, None
        sent = time.monotonic()
        try:
            self._count(tally, "requests")
            body, response = self._exchange(path, params, deadline)
            status = response.status_code
            if response.is_success:
                outcome = Outcome.OK
                return body
            error = problem_from_response(status, body, response.headers, path, self._redactor)
            if status == 429:
                outcome, retry_after = Outcome.THROTTLED, error.retry_after
                self._count(tally, "throttled")
            elif status < 500:
                outcome = Outcome.REFUSED
            raise error
        finally:
            self._host.release()
            self.limiter.release(ticket, outcome, time.monotonic() - sent, retry_after)

    def _exchange(
        self, path: str, params: dict[str, Any] | None, deadline: Deadline | None
    ) -> tuple[bytes, httpx.Response]:
        at, cut = self._request_deadline(deadline)
        with request_deadline(at) as bound:
            try:
                with self._http.stream("GET", path, params=params) as response:
                    return self._read(response, path, at, cut), response
            except httpx.TimeoutException:
                if bound.reached:
                    raise _deadline_error(path, cut) from None
                raise TransportFailure(
                    f"GET {path} timed out after {self.settings.timeout_s:g}s"
                ) from None
            except httpx.TransportError as exc:
                reason = type(exc).__name__
                raise TransportFailure(
                    f"GET {path} failed: no response from {self.settings.base_url} ({reason})"
                ) from None

    def _request_deadline(self, deadline: Deadline | None) -> tuple[float, str]:
        """When a request starting now must be done, and how its error will say it was cut."""
        seconds = self.settings.request_deadline_s
        at = time.monotonic() + seconds
        if deadline is not None and deadline.at < at:
            return deadline.at, f"was cut off by the deadline of the {deadline.what}"
        setting = env_name(ApiSettings, "request_deadline_s")
        return at, f"did not complete within {seconds:g}s ({setting})"

    def _read(self, response: httpx.Response, path: str, at: float, cut: str) -> bytes:
        """The whole body, decompressed within the size cap, by the request's deadline (also
        checked between chunks, for transports whose sockets are not ours)."""

        def chunks() -> Iterator[bytes]:
            for chunk in response.iter_raw():
                if time.monotonic() > at:
                    raise _deadline_error(path, cut)
                yield chunk

        encoding = response.headers.get("Content-Encoding", "")
        cap = self.settings.max_response_bytes
        setting = env_name(ApiSettings, "max_response_bytes")
        return read_capped(chunks(), encoding, cap, path, setting)

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET a JSON document, numbers kept exact (never float): see ``parse_exact_json``."""
        return self.get(path, params, lambda body: parse_exact_json(body, path))


_CLIENT_COUNTER = {"requests": "requests_sent", "retries": "retries", "throttled": "throttled"}


def _turn_not_given(deadline: Deadline | None, whose: str) -> DeadlineExceeded:
    """A deadline that passed while the request waited for its turn (only a deadline ends a
    wait for a turn, so there is one)."""
    what = deadline.message(f"waiting for {whose} turn") if deadline else f"{whose} turn"
    return DeadlineExceeded(what)


def _paced(exc: ApiError) -> bool:
    return isinstance(exc, RateLimited) and is_pacing(exc.status, exc.retry_after)


# An integer longer than this stays text: Python refuses to convert very long digit strings, and
# no count or limit the API sends is near it.
_LONGEST_INT = 100


def _deadline_error(path: str, cut: str) -> RequestDeadlineExceeded:
    return RequestDeadlineExceeded(f"GET {path} {cut}; the server sent too slowly or stopped")


def parse_exact_json(body: bytes, path: str) -> Any:
    """A JSON document with every fraction or exponent kept as its exact text (JsonNumber), and
    integers as int unless absurdly long: the reader of a value decides what number it is (money
    by pipelines/api/money.py's rule), so no value can fail or round the parse itself."""
    try:
        return json.loads(
            body, parse_float=JsonNumber, parse_int=_integer, parse_constant=_reject_constant
        )
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedResponse(f"GET {path} returned a body that is not JSON: {exc}") from None


def _integer(text: str) -> int | JsonNumber:
    return int(text) if len(text) <= _LONGEST_INT else JsonNumber(text)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# The RFC 7807 members a ProblemError takes as arguments (``type`` is a builtin's name, so its
# argument is ``type_``); every other member but ``status`` is kept in ``extra``.
_PROBLEM_MEMBERS = {"title": "title", "detail": "detail", "instance": "instance", "type": "type_"}


def problem_from_response(
    status: int,
    body: bytes,
    headers: httpx.Headers,
    path: str,
    redactor: Redactor | None = None,
) -> ProblemError:
    """Turn an error response into a typed exception carrying its problem details.

    Every text from the server is scrubbed of the key's spellings first: the exception's
    message reaches the CLI, logs and Dagster's event log.
    """
    scrub = redactor.scrub if redactor else (lambda text: text)
    members: dict[str, str | None] = dict.fromkeys(_PROBLEM_MEMBERS.values())
    extra: dict[str, Any] = {}
    try:
        doc = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        doc = None
    if isinstance(doc, dict):
        members = {arg: _scrubbed(doc.get(name), scrub) for name, arg in _PROBLEM_MEMBERS.items()}
        extra = {
            scrub(str(k)): scrub(json.dumps(v, default=str))
            for k, v in doc.items()
            if k not in _PROBLEM_MEMBERS and k != "status"
        }
    if members["title"] is None:
        members["title"] = httpx.codes.get_reason_phrase(status) or None
    retry_after = parse_retry_after(headers.get("Retry-After"))
    return problem_class(status)(
        status=status, path=path, retry_after=retry_after, extra=extra, **members
    )


def _scrubbed(value: Any, scrub: Callable[[str], str]) -> str | None:
    return None if value is None else scrub(str(value))
