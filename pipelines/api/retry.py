"""When and how long to wait before asking the API again.

Bounded exponential backoff with full jitter, so that many syncs hitting one rate limit do
not retry in lockstep; a server's Retry-After wins when it asks for longer.

A 429 that says when to come back (Retry-After of a second or more) is the server pacing us, not
failing: it does not count against ``max_retries`` (a sync reading at the key's rate meets a few
of them on every window), only against ``THROTTLED_RETRIES`` and the deadlines. A 429 without
one (or with 0) says nothing about when, so it counts like a 503. ``max_retries`` 0 still means
no retry at all, and no wait for the key's turn either: a caller asking one question per endpoint
(the key audit) wants its answer now, a 429 included.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime

# A server asking for more than this is treated as asking for this: a sync should fail clearly
# rather than sleep for an hour.
RETRY_AFTER_CAP_S = 120.0
# 429s in a row for one request before it fails: each holds every request of the key for at least
# a second (pipelines/api/pacing.py), so 50 is minutes of being refused, far beyond a rate limit.
THROTTLED_RETRIES = 50


@dataclass
class Backoff:
    base_s: float
    max_s: float
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to sleep before retry number ``attempt`` (1-based)."""
        ceiling = min(self.max_s, self.base_s * (2 ** (attempt - 1)))
        wait = self.rng.uniform(0, ceiling)
        if retry_after is not None:
            wait = max(wait, min(retry_after, RETRY_AFTER_CAP_S))
        return wait


def is_pacing(status: int, retry_after: float | None) -> bool:
    """Whether an answer is the server asking us to slow down and saying when to come back."""
    return status == 429 and retry_after is not None and retry_after >= 1


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds from ``now`` (the epoch time; the clock's by default).

    RFC 9110 allows either delay-seconds or an HTTP-date. A date is honoured as the wait until it
    (a date already past means now): read as "one second", a gateway that says "come back at
    12:00:30" would be asked again and again until then, each refusal counted. Anything else
    unreadable is read as "soon" (one second), as before.
    """
    if not value:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return 1.0
    if when.tzinfo is None:  # every HTTP-date is GMT; the obsolete asctime form omits it
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
