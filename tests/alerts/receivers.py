"""Real local servers behind Apprise URLs: an HTTP receiver (json://, Mattermost's mmost://
webhook, which speaks Slack's format) and an SMTP server (aiosmtpd) behind mailto://."""

from __future__ import annotations

import email
import email.policy
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller

from benchmarks.harness.postgres import free_port


@dataclass
class Received:
    """What the receivers got, each message as (where, text) in arrival order."""

    http: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    mail: list[str] = field(default_factory=list)
    # Each e-mail whole, its attachments with it (month close's statements).
    emails: list[email.message.EmailMessage] = field(default_factory=list)

    def texts(self) -> list[str]:
        return [json.dumps(body) for _, body in self.http] + self.mail

    def clear(self) -> None:
        self.http.clear()
        self.mail.clear()
        self.emails.clear()


class _Mailbox:
    def __init__(self, received: Received) -> None:
        self.received = received

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        mail = email.message_from_bytes(envelope.content, policy=email.policy.default)
        part = mail.get_body(preferencelist=("plain",))
        text = part.get_content() if part is not None else ""
        self.received.mail.append(f"Subject: {mail['Subject']}\n{text}")
        self.received.emails.append(mail)  # type: ignore[arg-type]
        return "250 OK"


@contextmanager
def receivers() -> Iterator[tuple[Received, int, int]]:
    """(what was received, the HTTP port, the SMTP port) for the block."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            received.http.append((self.path, json.loads(self.rfile.read(length) or b"{}")))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    smtp_port = free_port()
    smtp = Controller(_Mailbox(received), hostname="127.0.0.1", port=smtp_port)
    smtp.start()
    try:
        yield received, http.server_address[1], smtp_port
    finally:
        smtp.stop()
        http.shutdown()
        http.server_close()


@contextmanager
def unresponsive(seconds: float = 120.0) -> Iterator[tuple[int, int]]:
    """(an HTTP port that answers after ``seconds``, an SMTP port that accepts and never greets)
    for the block: the services a delivery must not wait on past its deadline. Both stop with the
    block, whatever they are still holding."""
    done = threading.Event()

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            done.wait(seconds)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    http.daemon_threads = True
    threading.Thread(target=http.serve_forever, daemon=True).start()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel accepts; nothing ever reads or writes
    try:
        yield http.server_address[1], silent.getsockname()[1]
    finally:
        done.set()
        silent.close()
        http.shutdown()
        http.server_close()
