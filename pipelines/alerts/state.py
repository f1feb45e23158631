"""Once per crossing, and an end for every alert: from observations and the alerts' previous
states to the changes recorded (docs/alerts.md says the rules for users).

Threshold kinds keep a state per rule x account x value: a crossing is one ``firing`` change, a
recovery one ``recovered`` change, an unchanged state none. Event kinds fire once per event and
end too: a hidden movement's alert is ``recovered`` once its finding is acknowledged or gone, a
spend anomaly is ``closed`` once it has been open for its days. The first evaluation of a rule
reports the present only: an event that is not happening now is recorded as ``baseline`` (seen,
never sent), so two years of history are not two years of messages. A change is queued once per
channel of its rule; the levels of one budget crossed at once are one message, the highest's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from pipelines.alerts.messages import message
from pipelines.alerts.observe import CLOSED, EVENT, FIRING, OK, RECOVERED, Observation, alert_id
from pipelines.config.alert_rules import Rule
from pipelines.config.settings import ANOMALY_OPEN_DAYS
from pipelines.warehouse.alert_store import Latest
from pipelines.warehouse.outbox import outbox_row

# How long a spend anomaly (a notice about a past day) stays open unless said otherwise.
DEFAULT_OPEN_FOR = timedelta(days=ANOMALY_OPEN_DAYS)
SENT_STATES = (FIRING, RECOVERED)


@dataclass(frozen=True)
class Change:
    observation: Observation
    state: str  # firing | recovered | closed | baseline
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
    now: datetime | None = None,
    open_for: timedelta = DEFAULT_OPEN_FOR,
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
            out.append(Change(obs, RECOVERED, seq))
    firing = {k: b for k, b in latest.items() if k not in seen and b.state == FIRING}
    for key, before in firing.items():
        end = _end(rule, account, key, before, now, open_for)
        if end is not None:
            out.append(end)
    return out


def _end(
    rule: Rule,
    account: str,
    key: str,
    before: Latest,
    now: datetime | None,
    open_for: timedelta,
) -> Change | None:
    """The end of a firing alert this evaluation did not observe again, if it has come."""
    state, evidence = RECOVERED, ""
    if rule.kind == "budget":  # a value with no spend this month (a new month)
        evidence = "no spend this month: under every level again"
    elif rule.kind == "hidden_movement":
        evidence = "its finding was acknowledged (`creditlens breaks ack`) or is no longer found"
    elif rule.kind == "spend_anomaly":
        if now is None or before.fired_at is None or now < before.fired_at + open_for:
            return None
        state, evidence = CLOSED, f"a notice about a past day, open for {open_for.days} days"
    elif rule.kind == "sync_failed":  # one kept per failed sync by an earlier version
        state, evidence = CLOSED, "replaced by the account's one sync_failed alert"
    else:
        return None
    gone = Observation(
        rule, account, before.value, Decimal(0) if rule.kind == "budget" else None, None, OK,
        evidence, known_id=key, next_step="nothing: it is over",
    )  # fmt: skip
    return Change(gone, state, before.seq + 1)


def rows(
    found: Sequence[Change], now: datetime, site: str = ""
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The alert_events rows of ``found`` and the outbox rows of those to send: every firing
    and every recovery (an acknowledgement belongs to its crossing and mutes no later one),
    the levels of one budget that changed together as one message, the highest level's."""
    events, outbox = [], []
    for change in found:
        events.append(_event(change, now))
    for change, also in _one_per_group([c for c in found if c.state in SENT_STATES]):
        obs = change.observation
        title, body = message(obs, change.state, change.event_id, site=site, also=also)
        for channel in obs.rule.channels:
            outbox.append(outbox_row(change.event_id, obs.alert_id, channel, title, body, now))
    return events, outbox


def _one_per_group(sent: Sequence[Change]) -> list[tuple[Change, list[str]]]:
    """Each change to send, with the other levels of its group that changed the same way."""
    groups: dict[tuple[Any, ...], list[Change]] = {}
    alone: list[tuple[Change, list[str]]] = []
    for change in sent:
        obs = change.observation
        if obs.group is None:
            alone.append((change, []))
        else:
            key = (obs.rule.name, obs.account, obs.group, change.state)
            groups.setdefault(key, []).append(change)
    for members in groups.values():
        members.sort(key=lambda c: c.observation.rank, reverse=True)
        highest, others = members[0], members[1:]
        level = highest.observation.group or ""
        names = [_level(c.observation.value or "", level) for c in others]
        alone.append((highest, names))
    return alone


def _level(value: str, group: str) -> str:
    """``agent a 80%`` of group ``agent a`` -> ``80%``."""
    return value.removeprefix(group).strip() if group else value


def _event(change: Change, now: datetime) -> dict[str, Any]:
    obs = change.observation
    return {
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


__all__ = ["Change", "alert_id", "changes", "rows"]
