"""Running the app under uvicorn (httptools) in a background thread, or in the foreground.

The protocol subclass hands the app a way to abort the TCP connection, so the "reset" fault is a
real reset rather than an HTTP error.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from simulator.app import ABORT_EXTENSION, build_app
from simulator.core import Simulator
from simulator.network import NetworkSpec


class AbortableHttpToolsProtocol(HttpToolsProtocol):
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope["extensions"] = {ABORT_EXTENSION: self.transport.abort}


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    # Listening at once: connections made before uvicorn's loop starts wait in the backlog
    # instead of being refused, so "listening on ..." is true as soon as it is printed.
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def make_server(sim: Simulator, log_level: str = "warning") -> uvicorn.Server:
    config = uvicorn.Config(
        build_app(sim),
        http=AbortableHttpToolsProtocol,
        lifespan="off",
        access_log=False,
        log_level=log_level,
        timeout_graceful_shutdown=1,
        server_header=False,
    )
    return uvicorn.Server(config)


@dataclass
class ServerHandle:
    host: str
    port: int
    _server: uvicorn.Server = field(repr=False)
    _thread: threading.Thread = field(repr=False)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@contextmanager
def serve(
    sim: Simulator,
    host: str = "127.0.0.1",
    port: int = 0,
    log_level: str = "warning",
    network: NetworkSpec | None = None,
) -> Iterator[ServerHandle]:
    """Serves `sim` on a real socket until the block ends; port 0 picks a free port.

    `network`, when given, is put in force on `sim` (`sim.network.configure`) before the first
    request and stays after the block: the conditions belong to the simulator, not the socket.
    """
    if network is not None:
        sim.network.configure(network)
    sock = bind_socket(host, port)
    server = make_server(sim, log_level)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="simulator-server", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the simulator server did not start")
        time.sleep(0.01)
    handle = ServerHandle(host, sock.getsockname()[1], server, thread)
    try:
        yield handle
    finally:
        handle.stop()
        sock.close()
