"""Once per crossing: from observations and the alerts' previous states to the changes recorded.

Threshold kinds keep a state per rule x account x value: a crossing is one ``firing`` change, a
recovery one ``recovered`` change, an unchanged state none. Event kinds fire once per event.
The first evaluation of a rule reports the present only: an event that is not happening now is
recorded as ``baseline`` (seen, never sent), so two years of history are not two years of
messages. A change is queued once per channel of its rule; an acknowledged alert queues nothing
until it recovers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from pipelines.alerts.messages import message
from pipelines.alerts.observe import EVENT, FIRING, OK, Observation, alert_id
from pipelines.config.alert_rules import Rule
from pipelines.warehouse.alert_store import Latest, outbox_row


@dataclass(frozen=True)
class Change:
    observation: Observation
    state: str  # firing | recovered | baseline
    seq: int

    @property
    def event_id(self) -> str:
        return f"{self.observation.alert_id}/{self.seq}"


def changes(
    rule: Rule,
    account: str,
    observations: Sequence[Observation],
    latest: dict[str, Latest],
    first: bool,
) -> list[Change]:
    """The changes ``observations`` make to ``latest`` (alert_id -> its latest change)."""
    out: list[Change] = []
    seen: set[str] = set()
    for obs in observations:
        key = obs.alert_id
        seen.add(key)
        before = latest.get(key)
        seq = before.seq + 1 if before else 1
        if obs.condition == EVENT:
            if before is None:
                out.append(Change(obs, FIRING if obs.present or not first else "baseline", seq))
        elif obs.condition == FIRING and (before is None or before.state != FIRING):
            out.append(Change(obs, FIRING, seq))
        elif obs.condition == OK and before is not None and before.state == FIRING:
            out.append(Change(obs, "recovered", seq))
    if rule.kind == "budget":
        # A value with no spend this month (a new month) is under every level again.
        for key, before in latest.items():
            if key not in seen and before.state == FIRING:
                evidence = "no spend this month: under every level again"
                gone = Observation(
                    rule, account, before.value, Decimal(0), None, OK, evidence, known_id=key
                )
                out.append(Change(gone, "recovered", before.seq + 1))
    return out


def rows(
    found: Sequence[Change], latest: dict[str, Latest], now: datetime
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The alert_events rows of ``found`` and the outbox rows of those to send."""
    events, outbox = [], []
    for change in found:
        obs = change.observation
        events.append(
            {
                "event_id": change.event_id,
                "alert_id": obs.alert_id,
                "seq": change.seq,
                "rule": obs.rule.name,
                "kind": obs.rule.kind,
                "account": obs.account,
                "dimension_value": obs.value,
                "state": change.state,
                "measured": obs.measured,
                "threshold": obs.threshold,
                "severity": obs.severity,
                "evidence": obs.evidence,
                "occurred_at": now,
                "reason": None,
                "acted_by": None,
            }
        )
        before = latest.get(obs.alert_id)
        silenced = before is not None and before.acknowledged and change.state == FIRING
        if change.state == "baseline" or silenced:
            continue
        title, body = message(obs, change.state, change.event_id)
        for channel in obs.rule.channels:
            outbox.append(outbox_row(change.event_id, obs.alert_id, channel, title, body, now))
    return events, outbox


__all__ = ["Change", "alert_id", "changes", "rows"]
