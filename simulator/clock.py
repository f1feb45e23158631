"""The simulated now: nothing after it is ever served, and moving it appends new days."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from simulator.timefmt import dt_to_ms, ms_to_dt, to_utc


class Clock:
    """Frozen until told otherwise, so a test sees exactly the days it asked for."""

    def __init__(self, now: datetime, on_change: Callable[[datetime], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._ms = dt_to_ms(to_utc(now))
        self._on_change = on_change

    @property
    def now(self) -> datetime:
        return ms_to_dt(self._ms)

    @property
    def now_ms(self) -> int:
        return self._ms

    def set(self, now: datetime) -> None:
        with self._lock:
            self._ms = dt_to_ms(to_utc(now))
            current = self.now
        if self._on_change is not None:
            self._on_change(current)

    def advance(self, delta: timedelta) -> None:
        with self._lock:
            self._ms += int(delta / timedelta(milliseconds=1))
            current = self.now
        if self._on_change is not None:
            self._on_change(current)

    def __repr__(self) -> str:
        return f"Clock(now={self.now.isoformat()})"
