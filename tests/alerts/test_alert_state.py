"""Once per crossing, as a pure function of observations and the previous states."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
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


def test_an_anomaly_closes_by_itself_after_its_open_days_and_not_before() -> None:
    """A notice about a past day: open (listed, its check WARN) for its days, then closed, with
    nothing sent; until then a later evaluation, which no longer observes it, leaves it open."""
    fired_at = NOW - timedelta(days=2)
    latest = {"al-000000000001": Latest("firing", 1, False, "agent a on 2026-03-01", fired_at)}
    open_for = timedelta(days=3)
    assert changes(SPIKES, "acme", [], latest, False, NOW, open_for) == []
    (closed,) = changes(SPIKES, "acme", [], latest, False, NOW + timedelta(days=1), open_for)
    assert (closed.state, closed.seq, closed.observation.alert_id) == (
        "closed", 2, "al-000000000001",
    )  # fmt: skip
    _, outbox = rows([closed], NOW)
    assert outbox == []


def test_a_hidden_movement_recovers_once_its_finding_is_gone_and_says_so() -> None:
    moves = Rule("m", "hidden_movement", channels=("ops",))
    latest = {"al-000000000002": Latest("firing", 1, False, None, NOW)}
    (ended,) = changes(moves, "acme", [], latest, False, NOW)
    assert ended.state == "recovered"
    _, outbox = rows([ended], NOW)
    (message,) = outbox
    assert message["title"] == "creditlens recovered: m on acme"
    assert "acknowledged" in message["body"] and "no longer found" in message["body"]


def test_levels_crossed_together_are_one_message_at_the_highest() -> None:
    def level(key: str, rank: int) -> Observation:
        return Observation(
            BUDGET, "acme", key, D(130), D(80), FIRING, f"{key} crossed", group="", rank=rank
        )

    found = changes(
        BUDGET, "acme", [level("80%", 2), level("100%", 3), level("projected", 1)], {}, True
    )
    events, outbox = rows(found, NOW)
    assert sorted(e["dimension_value"] for e in events) == ["100%", "80%", "projected"]
    (message,) = outbox
    assert message["title"] == "creditlens WARN: b on acme, 100%"
    assert "- Also crossed: 80%, projected" in message["body"]
