"""Fixtures of the report tests: a known warehouse, its site, a loopback server and a browser."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dashboards.site import SiteResult, build_site
from tests.dashboards.cdp import Chromium, chromium_available
from tests.dashboards.warehouse_factory import Fixture, built_once


@dataclass
class Built:
    fixture: Fixture
    site: SiteResult


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("report")
    fixture = built_once(tmp_path_factory)  # read only, here as before: shared
    return Built(fixture, build_site(fixture.path, root / "site", lock_timeout_s=60))


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def served(built: Built) -> Iterator[str]:
    """The site over http on loopback only, from a thread."""
    handler = functools.partial(_QuietHandler, directory=str(built.site.out_dir))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Chromium]:
    if not chromium_available():
        reason = "headless Chromium not installed at /usr/bin/chromium (apt-get install chromium)"
        if os.environ.get("CREDITLENS_REQUIRE_BROWSER") == "1":
            pytest.fail(f"CREDITLENS_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    browser = Chromium()
    try:
        yield browser
    finally:
        browser.close()


def site_files(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html"))
