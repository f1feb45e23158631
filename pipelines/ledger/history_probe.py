"""History discovery's questions, asked of the real API through the one ledger reader."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from pipelines.api.client import PlatformClient
from pipelines.api.ledger_reader import LedgerReader, PageRead, WindowRestart
from pipelines.api.windows import Window


class ApiProbe:
    """Counts with pages of size 1 (the envelope's total is all a count needs) and reads a
    day whole through the reader, so its drift checks and retries apply to discovery too."""

    def __init__(self, client: PlatformClient) -> None:
        small = client.settings.model_copy(update={"page_size": 1})
        self._counter = LedgerReader(PlatformClient(small))
        self._reader = LedgerReader(client)

    @property
    def requests(self) -> int:
        return self._counter.client.requests_sent + self._reader.stats.pages

    def count(self, first: date, last: date) -> int:
        return self._counter.total(Window(first, last))

    def entries_of(self, day: date) -> Sequence[dict[str, Any]]:
        entries: list[dict[str, Any]] = []
        for event in self._reader.read_window(Window(day, day)):
            if isinstance(event, WindowRestart):
                entries.clear()
            elif isinstance(event, PageRead):
                entries.extend(event.entries)
        return entries

    def close(self) -> None:
        self._counter.client.close()
