"""A hook for progress, so the CLI can draw a bar while Dagster runs the assets in-process.

Assets report through ``report``; nothing happens unless a listener is installed (the CLI's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Listener = Callable[[str, dict[str, Any]], None]
_listeners: list[Listener] = []


def report(event: str, **data: Any) -> None:
    for listener in list(_listeners):
        listener(event, data)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)
