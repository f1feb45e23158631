"""What an evaluation sees: one observation per rule, account and dimension value (or event).

A threshold kind's observation says which side of its line the value is on, with the
hysteresis already applied (``condition``): firing past the threshold, ok only past it by the
rule's ``recover_margin``, and ``hold`` in between, so a balance hovering at the line neither
fires nor recovers again. An event kind's observation is one event, with whether it is
happening now (the first evaluation of a rule sends only those).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_CEILING, Decimal

from pipelines.config.alert_rules import Rule

FIRING, OK, HOLD, EVENT = "firing", "ok", "hold", "event"
# The ends of an alert: recovered (a message says so) and closed (an event whose time is over,
# or that a person closed by acknowledging it: nothing more to say).
RECOVERED, CLOSED = "recovered", "closed"
ERROR_KINDS = frozenset({"balance_below", "runway_below", "sync_failed"})
Figure = tuple[str, str]  # (label, value) of one line of a message


@dataclass(frozen=True)
class Observation:
    rule: Rule
    account: str
    value: str | None  # dimension value, budget level, anomaly's value; None: the account
    measured: Decimal | None
    threshold: Decimal | None
    condition: str  # firing | ok | hold for threshold kinds; event for event kinds
    evidence: str
    event: str | None = None  # an event kind's identity (a day and value, a break id, a sync)
    present: bool = True
    known_id: str | None = None  # an alert seen before whose value is not observed again
    figures: tuple[Figure, ...] = ()  # the message's lines, one figure each
    next_step: str = ""  # what the person who reads the message does next
    # Levels of one budget crossed at once are one message, the highest level's: the group
    # (the budget's value) and the level's rank among its levels.
    group: str | None = None
    rank: int = 0

    @property
    def alert_id(self) -> str:
        return self.known_id or alert_id(self.rule.name, self.account, self.value, self.event)

    @property
    def severity(self) -> str:
        return "error" if self.rule.kind in ERROR_KINDS else "warn"


@dataclass
class Evaluated:
    """What one rule saw for one account: its observations, what it could not judge, and the
    last day judged (spend anomalies: where the next evaluation starts)."""

    observations: list[Observation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be judged, and why
    data_day: date | None = None


def alert_id(rule: str, account: str, value: str | None, event: str | None = None) -> str:
    """Stable across reruns: the same rule, account, value (and event) give the same id."""
    text = "\0".join((rule, account, value or "", event or ""))
    return "al-" + hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def below(measured: Decimal, threshold: Decimal, margin: Decimal) -> str:
    """Firing under ``threshold``; ok again only at ``threshold * (1 + margin)`` or more."""
    if measured < threshold:
        return FIRING
    return OK if measured >= threshold * (1 + margin) else HOLD


def above(measured: Decimal, threshold: Decimal, margin: Decimal) -> str:
    """Firing at ``threshold`` or more; ok again only under ``threshold * (1 - margin)``."""
    if measured >= threshold:
        return FIRING
    return OK if measured < threshold * (1 - margin) else HOLD


def at_least(amount: Decimal) -> str:
    """An amount a person must reach, rounded up to the cent: following it is always enough."""
    return credits(amount.quantize(Decimal("0.01"), rounding=ROUND_CEILING))


def credits(amount: Decimal | None) -> str:
    """An amount as a person reads it: grouped, no trailing zeros."""
    if amount is None:
        return "unknown"
    text = f"{amount.quantize(Decimal('0.01')):,.2f}"
    return text.removesuffix(".00")
