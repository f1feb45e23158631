"""One message to one service, through Apprise: its text as Markdown, its files attached where
the service takes them, and nothing Apprise says reaching a log.

A URL carries its token, so it is handed in at the moment of sending and goes nowhere else:
Apprise's own logging is kept in memory while it sends and read only for the kind of failure,
said in creditlens's words. A service that takes files (e-mail, json://) gets them from a
private temporary folder, removed once sent; the others get the text alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from urllib.parse import urlsplit

PAYLOAD_ID = "creditlens_event_id"  # the message's id in a json:// payload
Attachment = tuple[str, bytes]  # (file name, content)


class _Heard(logging.Handler):
    """What Apprise said while it sent, kept in memory and read only for its status code or
    the kind of its failure: its text may hold a host or a path, so it goes nowhere else."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # a record that cannot be formatted says nothing
            self.lines.append(record.getMessage())

    def why(self) -> str:
        """The reason a service gave, in creditlens's words; never Apprise's own text."""
        text = "\n".join(self.lines)
        status = re.search(r"error=(\d{3})\b|\b(?:HTTP|status)[^0-9]{0,12}(\d{3})\b", text)
        if status:
            return f"the service answered HTTP {status.group(1) or status.group(2)}"
        lowered = text.lower()
        if "timed out" in lowered or "timeout" in lowered:
            return "no answer within the timeout"
        if "refused" in lowered:
            return "the connection was refused"
        if "connection" in lowered or "socket" in lowered or "resolve" in lowered:
            return "the service could not be reached"
        if "authentication" in lowered or "login" in lowered:
            return "the service refused the credentials"
        return "the service did not accept the message"


@contextmanager
def _apprise_heard() -> Iterator[_Heard]:
    """Apprise logs what it tries, hosts and paths included: nothing of it may reach a log, so
    its records go to a handler that only keeps them for ``_Heard.why``."""
    logger = logging.getLogger("apprise")
    heard = _Heard()
    saved = (logger.disabled, logger.propagate, logger.level, list(logger.handlers))
    logger.disabled, logger.propagate = False, False
    logger.setLevel(logging.DEBUG)
    logger.handlers[:] = [heard]
    try:
        yield heard
    finally:
        logger.disabled, logger.propagate, _, _ = saved
        logger.setLevel(saved[2])
        logger.handlers[:] = saved[3]


def _malformed(url: str) -> str:
    """Why Apprise knows no service at ``url``, when the URL itself says it."""
    try:
        port = urlsplit(url).port
    except ValueError:
        return "its port is not a number from 1 to 65535"
    if "://" not in url:
        return "it holds no URL (a service://... address)"
    return "" if port is None or port > 0 else "its port is not a number from 1 to 65535"


def send(
    url: str,
    title: str,
    body: str,
    event_id: str,
    attachments: Sequence[Attachment] = (),
    *,
    kind: str = "info",
    timeout_s: float | None = None,
) -> str | None:
    """None when the channel accepted the message, else why not (never the URL). The body is
    Markdown: services that render it get it as it is, e-mail gets HTML with a text part.
    ``kind`` is Apprise's notify type (pipelines/notify/message.py's ``notify_type``)."""
    # Imported here: Apprise loads its ~100 services (0.2 s), which every process that builds
    # the Dagster definitions would otherwise pay, sending or not.
    import apprise
    from apprise.plugins.custom_json import NotifyJSON

    malformed = _malformed(url)
    if malformed:
        return f"{malformed} (value not shown)"
    with _apprise_heard() as heard:
        try:
            plugin = apprise.Apprise.instantiate(url)
        except Exception:  # a malformed URL: a line, not a traceback
            plugin = None
        if plugin is None:
            return "it holds no URL Apprise knows (value not shown)"
        if isinstance(plugin, NotifyJSON):
            plugin.payload_extras[PAYLOAD_ID] = event_id
        plugin.request_rate_per_sec = 0  # one message at a time: no throttle to wait for
        if timeout_s is not None:  # no send outlives the run's deadline
            for name in ("socket_connect_timeout", "socket_read_timeout"):
                current = getattr(plugin, name, None)
                if isinstance(current, int | float):
                    setattr(plugin, name, max(0.5, min(float(current), timeout_s)))
        with tempfile.TemporaryDirectory(prefix="creditlens-files-") as folder:
            attach = None
            if attachments and plugin.attachment_support:
                paths = []
                for name, content in attachments:
                    path = os.path.join(folder, os.path.basename(name))
                    with open(path, "wb") as file:
                        file.write(content)
                    paths.append(path)
                attach = apprise.AppriseAttachment(paths)
            try:
                accepted = plugin.notify(
                    body=body,
                    title=title,
                    attach=attach,
                    notify_type=apprise.NotifyType(kind),
                    body_format=apprise.NotifyFormat.MARKDOWN,
                )
            except Exception as exc:  # a channel never fails a sync
                return f"the channel failed ({type(exc).__name__})"
    return None if accepted else heard.why()
