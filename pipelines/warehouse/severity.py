"""How bad a finding is, as an ordered scale.

One scale serves the key's overall severity, each finding, the SARIF level and the
``--fail-on`` threshold, so a CI gate and a dashboard can never disagree about "high".
"""

from __future__ import annotations

from enum import Enum
from functools import total_ordering


@total_ordering
class Severity(Enum):
    NONE = "none"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _ORDER.index(self)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank < other.rank

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Read a user-supplied severity; one clear line when it is not one of the five."""
        try:
            return cls(text.strip().lower())
        except ValueError:
            allowed = ", ".join(s.value for s in _ORDER)
            raise ValueError(f"unknown severity {text!r}: expected one of {allowed}") from None


_ORDER = [Severity.NONE, Severity.LOW, Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL]


def highest(severities: list[Severity] | tuple[Severity, ...]) -> Severity:
    return max(severities, default=Severity.NONE)
