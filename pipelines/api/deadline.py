"""Deadlines a server's pace cannot stretch.

``CREDITLENS_TIMEOUT`` bounds each read from the socket, so a server that trickles its headers or
body a byte a second never trips it and holds a sync for as long as it likes (slowloris). Two
deadlines bound the whole instead: one per request (connect, headers, body), enforced at the
socket, where every read's wait is cut to what is left of it; and one per ledger window, retries
and re-reads included, checked between requests.

The request deadline lives in a thread-local scope because the HTTP library reads the socket deep
inside a call we cannot pass it to; each request runs in the thread that sent it (pages fetched
concurrently each have their own thread), so the scope is that request's alone.
"""

from __future__ import annotations

import functools
import os
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

_scope = threading.local()


@dataclass
class RequestDeadline:
    """When the current request must be done by, and whether it was the deadline (not a read
    timeout) that ended it, so the error can say which."""

    at: float
    reached: bool = False

    def bound(self, timeout: float | None, error: type[Exception]) -> float:
        """``timeout`` cut to what is left; raises ``error`` (the library's own timeout, so the
        library cleans up as for any timeout) once nothing is left."""
        left = self.at - time.monotonic()
        if left <= 0:
            self.reached = True
            raise error("the request's deadline passed")
        if timeout is None or left < timeout:
            self.reached = True  # if this wait times out, the deadline ended it
            return left
        self.reached = False
        return timeout


@contextmanager
def request_deadline(at: float) -> Iterator[RequestDeadline]:
    """Every socket operation of this thread, until the block ends, finishes by ``at``."""
    previous = getattr(_scope, "deadline", None)
    _scope.deadline = deadline = RequestDeadline(at)
    try:
        yield deadline
    finally:
        _scope.deadline = previous


def _bound(timeout: float | None, error: type[Exception]) -> float | None:
    deadline: RequestDeadline | None = getattr(_scope, "deadline", None)
    return timeout if deadline is None else deadline.bound(timeout, error)


class _Stream(httpcore.NetworkStream):
    """A socket stream whose every wait ends by the current request's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bound(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bound(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        bounded = _bound(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    """The standard blocking sockets, their streams bounded by the request's deadline."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        bounded = _bound(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, bounded, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        bounded = _bound(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


@functools.cache
def _ssl_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """One TLS context per process and trust store: building one loads the CA bundle (35 ms),
    which every client (one per account and step) paid twice. Contexts are safe to share across
    threads and connections; the trust store's variables are the key, so changing them is seen."""
    return httpx.create_ssl_context()


def deadline_transport(limits: httpx.Limits) -> httpx.HTTPTransport:
    """httpx's own transport, its connection pool built on sockets bounded by the deadline.

    httpx takes no network backend of its own, so its pool is replaced by an equal one that has
    ours; everything else (TLS, proxies from the environment, error mapping) stays httpx's.
    """
    context = _ssl_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    transport = httpx.HTTPTransport(verify=context, limits=limits)
    transport._pool = httpcore.ConnectionPool(
        ssl_context=context,
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=_Backend(),
    )
    return transport


@dataclass(frozen=True)
class Deadline:
    """A deadline over several requests (a ledger window, its retries and re-reads included),
    with what it bounds and the setting that sets it, for the error that ends it."""

    at: float
    what: str
    seconds: float
    setting: str

    @classmethod
    def after(cls, seconds: float, what: str, setting: str) -> Deadline:
        return cls(time.monotonic() + seconds, what, seconds, setting)

    def left(self) -> float:
        return self.at - time.monotonic()

    def message(self, last: object = None) -> str:
        text = f"{self.what} was not read within {self.seconds:g}s ({self.setting})"
        return f"{text}: {last}" if last else text
