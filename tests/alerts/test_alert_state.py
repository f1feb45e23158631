"""Once per crossing, as a pure function of observations and the previous states."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from pipelines.alerts.observe import EVENT, FIRING, HOLD, OK, Observation, above, below
from pipelines.alerts.state import changes, rows
from pipelines.config.alert_rules import Rule
from pipelines.warehouse.alert_store import Latest

D = Decimal
NOW = datetime(2026, 3, 3, tzinfo=UTC)
LOW = Rule("low", "balance_below", channels=("ops",), threshold=D(100))
BUDGET = Rule("b", "budget", channels=("ops",), monthly_limit=D(100))
SPIKES = Rule("s", "spend_anomaly", channels=("ops",), dimension="agent", min_credits=D(1))


def _balance(value: str) -> Observation:
    measured = D(value)
    return Observation(LOW, "acme", None, measured, D(100), below(measured, D(100), D("0.05")), "")


def test_hysteresis_lines() -> None:
    assert [below(D(v), D(100), D("0.05")) for v in ("99.99", "100", "104.99", "105")] == [
        FIRING, HOLD, HOLD, OK,
    ]  # fmt: skip
    assert [above(D(v), D(100), D("0.05")) for v in ("100", "99", "95.01", "94.99")] == [
        FIRING, HOLD, HOLD, OK,
    ]  # fmt: skip


def test_a_threshold_fires_once_holds_and_recovers_once() -> None:
    (fired,) = changes(LOW, "acme", [_balance("90")], {}, first=True)
    assert (fired.state, fired.seq) == ("firing", 1)
    latest = {fired.observation.alert_id: Latest("firing", 1, False)}
    assert changes(LOW, "acme", [_balance("80")], latest, first=False) == []
    assert changes(LOW, "acme", [_balance("103")], latest, first=False) == []  # within margin
    (recovered,) = changes(LOW, "acme", [_balance("106")], latest, first=False)
    assert (recovered.state, recovered.event_id) == ("recovered", f"{fired.observation.alert_id}/2")
    assert changes(LOW, "acme", [_balance("150")], {}, first=True) == []  # ok and never fired


def test_an_acknowledgement_never_mutes_a_later_crossing() -> None:
    """Fired, recovered, acknowledged (by an older version, which allowed it), then below again:
    the new crossing is news, and is sent."""
    (fired,) = changes(LOW, "acme", [_balance("90")], {}, first=True)
    acked = {fired.observation.alert_id: Latest("recovered", 3, True)}
    again = changes(LOW, "acme", [_balance("90")], acked, first=False)
    events, outbox = rows(again, NOW)
    assert [e["state"] for e in events] == ["firing"]
    assert [o["event_id"] for o in outbox] == [f"{fired.observation.alert_id}/4"]


def test_events_fire_once_and_the_first_evaluation_sends_only_the_present() -> None:
    old = Observation(SPIKES, "acme", "agent a on 2026-01-05", D(9), D(1), EVENT, "", "d1", False)
    new = Observation(SPIKES, "acme", "agent a on 2026-03-02", D(9), D(1), EVENT, "", "d2", True)
    found = changes(SPIKES, "acme", [old, new], {}, first=True)
    assert [c.state for c in found] == ["baseline", "firing"]
    _, outbox = rows(found, NOW)
    assert [o["event_id"] for o in outbox] == [found[1].event_id]
    seen = {c.observation.alert_id: Latest(c.state, 1, False) for c in found}
    assert changes(SPIKES, "acme", [old, new], seen, first=False) == []


def test_a_budget_level_recovers_when_a_new_month_has_no_spend_yet() -> None:
    crossed = Observation(BUDGET, "acme", "agent a 80%", D(85), D(80), FIRING, "")
    latest = {crossed.alert_id: Latest("firing", 1, False, "agent a 80%")}
    (recovered,) = changes(BUDGET, "acme", [], latest, first=False)
    assert recovered.state == "recovered"
    assert recovered.observation.alert_id == crossed.alert_id
    assert recovered.observation.value == "agent a 80%"
