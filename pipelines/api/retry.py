"""When and how long to wait before asking the API again.

Bounded exponential backoff with full jitter, so that many syncs hitting one rate limit do
not retry in lockstep; a server's Retry-After wins when it asks for longer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# A server asking for more than this is treated as asking for this: a sync should fail clearly
# rather than sleep for an hour.
RETRY_AFTER_CAP_S = 120.0


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


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds; HTTP-date values are rare for APIs and read as 'soon'."""
    if not value:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        return 1.0
