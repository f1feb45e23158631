"""A real headless Chromium driven over the DevTools protocol, and a tiny PNG reader.

No browser-automation library is a dependency: the protocol is JSON over a websocket, and the few
commands the tests need (navigate, evaluate, screenshot, listen for errors and dialogs) fit in a
page of code. The PNG reader exists only to tell a blank screenshot from a drawn one.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
    "--remote-debugging-port=0",
)


class BrowserError(RuntimeError):
    pass


@dataclass
class PageEvents:
    """What went wrong (or ran) while a page loaded."""

    exceptions: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return [*self.exceptions, *self.console_errors, *self.failed_requests]


class Chromium:
    """One browser process with one tab, over a fresh profile directory."""

    def __init__(self, timeout_s: float = 20.0) -> None:
        self.timeout_s = timeout_s
        self.profile = Path(tempfile.mkdtemp(prefix="creditlens-chromium-"))
        self.process = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._stack = ExitStack()
        try:
            self.ws = self._connect()
            target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.send(
                "Target.attachToTarget", {"targetId": target, "flatten": True}
            )["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.send(f"{domain}.enable", session=self.session)
        except BaseException:
            self.close()
            raise

    def _connect(self) -> ClientConnection:
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout_s
        while not port_file.exists() or len(port_file.read_text().splitlines()) < 2:
            if self.process.poll() is not None:
                raise BrowserError(f"chromium exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                raise BrowserError("chromium did not open its DevTools port")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        return self._stack.enter_context(
            connect(
                f"ws://127.0.0.1:{port}{path}",
                proxy=None,
                max_size=None,
                open_timeout=self.timeout_s,
            )
        )

    def close(self) -> None:
        self._stack.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    # -- protocol -----------------------------------------------------------------------------

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._event(reply)

    def _receive(self, deadline: float) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BrowserError("timed out waiting for chromium")
        try:
            return json.loads(self.ws.recv(timeout=remaining))
        except TimeoutError:
            raise BrowserError("timed out waiting for chromium") from None

    def _event(self, message: dict[str, Any]) -> None:
        self._events.append(message)
        if message.get("method") == "Page.javascriptDialogOpening":
            # A dialog blocks the page; dismiss it so the test can report it instead of hanging.
            self.ws.send(
                json.dumps(
                    {
                        "id": 0,
                        "sessionId": self.session,
                        "method": "Page.handleJavaScriptDialog",
                        "params": {"accept": False},
                    }
                )
            )

    def _drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            try:
                self._event(json.loads(self.ws.recv(timeout=remaining)))
            except TimeoutError:
                return

    # -- pages --------------------------------------------------------------------------------

    def evaluate(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=self.session,
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"evaluate failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str) -> PageEvents:
        """Loads ``url``, waits for the load event and for every chart to be drawn."""
        self._events.clear()
        self.send("Page.navigate", {"url": url}, session=self.session)
        deadline = time.monotonic() + self.timeout_s
        while not any(e.get("method") == "Page.loadEventFired" for e in self._events):
            self._event(self._receive(deadline))
        drawn = (
            "Array.from(document.querySelectorAll('.plot')).every("
            "p => p.classList.contains('js-plotly-plot') && p.querySelector('.main-svg'))"
        )
        while not self.evaluate(drawn):
            if time.monotonic() > deadline:
                break
            self._drain(0.05)
        self._drain(0.02)
        return self._collect()

    def _collect(self) -> PageEvents:
        events = PageEvents()
        for e in self._events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                events.exceptions.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                events.console_errors.append(params["entry"].get("text", ""))
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                events.console_errors.append(json.dumps(params.get("args", []))[:500])
            elif method == "Network.loadingFailed":
                events.failed_requests.append(
                    f"{params.get('errorText')} ({params.get('requestId')})"
                )
            elif method == "Network.responseReceived":
                response = params.get("response", {})
                if response.get("status", 200) >= 400:
                    events.failed_requests.append(f"{response['status']} {response.get('url')}")
            elif method == "Page.javascriptDialogOpening":
                events.dialogs.append(params.get("message", ""))
        return events

    def screenshot(self, clip: dict[str, float] | None = None) -> bytes:
        params: dict[str, Any] = {"format": "png"}
        if clip:
            params["clip"] = clip
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params, session=self.session)["data"]
        return base64.b64decode(data)


# -- PNG ------------------------------------------------------------------------------------


def png_colors(png: bytes, limit: int = 2) -> int:
    """Number of distinct pixel colors, counting up to ``limit`` (8-bit RGB/RGBA, no interlace)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, chunks, header = 8, [], b""
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        body = png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or color_type not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, color type {color_type}")
    bpp = 4 if color_type == 6 else 3
    raw = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    previous = bytearray(stride)
    colors: set[bytes] = set()
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(kind, line, previous, bpp)
        for x in range(0, stride, bpp * 7):  # a sample of every 7th pixel is plenty
            colors.add(bytes(line[x : x + bpp]))
        if len(colors) >= limit:
            return len(colors)
        previous = line
    return len(colors)


def _unfilter(kind: int, line: bytearray, previous: bytearray, bpp: int) -> None:
    if kind == 0:
        return
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = previous[i]
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
        elif kind == 4:
            corner = previous[i - bpp] if i >= bpp else 0
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
            line[i] = (line[i] + predictor) & 0xFF
        else:
            raise ValueError(f"bad PNG filter {kind}")


def chromium_available() -> bool:
    return CHROMIUM.exists() and os.access(CHROMIUM, os.X_OK)
