"""Where a company's history begins: a faithful start at a zero balance, explicit openings as a
movement before the first entry, long and dormant histories for history discovery, and the demo
scenario's findings."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from simulator import HiddenMovementSpec, Scenario, Simulator
from simulator.truth import GroundTruth
from tests.simulator.conftest import NOW, Served, Start

# "Now" late in November 2026, as the history-discovery work assumes.
LATE_2026 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def balance_before(entry: dict[str, Any]) -> Decimal:
    return entry["balanceAfter"] - entry["signedAmount"]


def assert_faithful_start(truth: GroundTruth, credits: Decimal, first_day: date) -> None:
    """The first entry is the plan's monthly grant at the first day's midnight, from zero."""
    first = truth.entries[0]
    assert first["type"] == "PlanGrant"
    assert first["createdAtText"] == f"{first_day.isoformat()}T00:00:00.000Z"
    assert (first["signedAmount"], first["description"]) == (credits, "Monthly plan credits")
    assert (first["channel"], first["agentId"], first["campaignId"]) == (None, None, None)
    assert balance_before(first) == Decimal(0) == truth.opening_balance
    assert all(m.position >= 0 for m in truth.hidden_movements)


def window(served: Served, start: date, end: date) -> tuple[int, list[dict[str, Any]]]:
    """(total, entries oldest first) of an inclusive range of UTC days, over HTTP."""
    with served.client() as client:
        entries = served.all_pages(client, {"startDate": start, "endDate": end})
    return len(entries), list(reversed(entries))


def wire_balance_before(entry: dict[str, Any]) -> Decimal:
    return Decimal(entry["balanceAfter"]) - Decimal(entry["amount"])


@pytest.fixture(scope="module")
def demo() -> Iterator[Simulator]:
    yield Simulator("default", now=NOW)


def test_small_starts_from_zero_with_a_plan_grant(small: Served) -> None:
    truth = small.sim.truth("acme")
    assert_faithful_start(truth, Decimal(10000), (NOW - timedelta(days=89)).date())
    assert truth.hidden_movements == []


def test_default_companies_start_from_zero_with_a_plan_grant(demo: Simulator) -> None:
    acme, globex = demo.truth("acme"), demo.truth("globex")
    assert_faithful_start(acme, Decimal(10000), (NOW - timedelta(days=729)).date())
    assert_faithful_start(globex, Decimal(2000), (NOW - timedelta(days=364)).date())


def test_a_history_starting_on_the_1st_has_only_the_monthly_grant() -> None:
    scenario = Scenario.named("small").with_company("acme", history_days=15)
    truth = Simulator(scenario, now=NOW).truth("acme")
    assert_faithful_start(truth, Decimal(10000), date(2025, 3, 1))
    grants = [e for e in truth.entries if e["type"] == "PlanGrant"]
    assert len(grants) == 1
    assert truth.entries[0]["position"] == 0


def test_the_opening_grant_changes_no_other_entry() -> None:
    """Drawing nothing from the RNG, the opening grant leaves every later entry as it was."""
    plain = Simulator(Scenario.named("small"), now=NOW).truth("acme").entries
    opened = Scenario.named("small").with_company("acme", opening_balance=Decimal(10000))
    explicit = Simulator(opened, now=NOW).truth("acme").entries
    strip = [{k: v for k, v in e.items() if k != "position"} for e in plain[1:]]
    assert strip == [{k: v for k, v in e.items() if k != "position"} for e in explicit]


def test_a_subscription_granting_nothing_starts_without_credits() -> None:
    scenario = Scenario.named("small").with_company("acme", status="Cancelled", history_days=10)
    truth = Simulator(scenario, now=NOW).truth("acme")
    assert all(e["type"] != "PlanGrant" for e in truth.entries)
    assert balance_before(truth.entries[0]) == 0 == truth.opening_balance
    assert truth.hidden_movements == []


def test_an_explicit_opening_balance_is_a_movement_before_the_first_entry(start: Start) -> None:
    served = start("opening_balance")
    truth = served.sim.truth("acme")
    first = truth.entries[0]
    assert balance_before(first) == Decimal("1234.5") == truth.opening_balance
    assert first["type"] != "PlanGrant"
    opening, *others = truth.hidden_movements
    assert others == []
    assert (opening.position, opening.before_created_at) == (-1, None)
    assert opening.after_created_at == first["createdAt"]
    assert (opening.expected_balance, opening.observed_balance, opening.gap) == (
        Decimal(0),
        Decimal("1234.5"),
        Decimal("1234.5"),
    )
    assert not opening.at_end
    total = sum((e["signedAmount"] for e in truth.entries), Decimal(0))
    assert truth.opening_balance + total == truth.balance
    day = first["createdAt"].date()
    _, served_first = window(served, day, day)
    assert served_first[0]["createdAt"] == first["createdAtText"]
    assert wire_balance_before(served_first[0]) == Decimal("1234.5")


def test_an_explicit_zero_opening_hides_nothing() -> None:
    scenario = Scenario.named("small").with_company("acme", opening_balance=Decimal(0))
    truth = Simulator(scenario, now=NOW).truth("acme")
    assert truth.entries[0]["type"] != "PlanGrant"
    assert balance_before(truth.entries[0]) == 0
    assert truth.hidden_movements == []


def test_a_movement_placed_before_the_first_entry_is_at_position_minus_one() -> None:
    first_day = (NOW - timedelta(days=89)).replace(hour=0)
    movement = HiddenMovementSpec(amount=Decimal("-3.5"), at=first_day - timedelta(hours=1))
    scenario = Scenario.named("small").with_company("acme", hidden_movements=[movement])
    truth = Simulator(scenario, now=NOW).truth("acme")
    (found,) = truth.hidden_movements
    assert (found.position, found.before_created_at) == (-1, None)
    assert found.after_created_at == truth.entries[0]["createdAt"]
    assert (found.expected_balance, found.observed_balance, found.gap) == (
        Decimal(0),
        Decimal("-3.5"),
        Decimal("-3.5"),
    )
    assert balance_before(truth.entries[0]) == Decimal("-3.5")


def test_long_history_serves_entries_from_1360_days_back(start: Start) -> None:
    served = start("long_history", now=LATE_2026)
    first_day = (LATE_2026 - timedelta(days=1359)).date()
    assert first_day == date(2023, 3, 7)
    assert window(served, first_day - timedelta(days=366), first_day - timedelta(days=1))[0] == 0
    total, entries = window(served, first_day, first_day + timedelta(days=6))
    assert total > 20
    first = entries[0]
    assert (first["createdAt"], first["type"]) == ("2023-03-07T00:00:00.000Z", "PlanGrant")
    assert Decimal(first["amount"]) == Decimal(10000)
    assert wire_balance_before(first) == 0
    truth = served.sim.truth("acme")
    assert truth.entries[0]["createdAtText"] == first["createdAt"]
    assert truth.hidden_movements == []
    assert 1360 * 5 < len(truth.entries) < 1360 * 12


def test_dormant_start_has_a_500_day_empty_stretch(start: Start) -> None:
    served = start("dormant_start", now=LATE_2026)
    today = LATE_2026.date()
    first_day = today - timedelta(days=1099)
    quiet_first, quiet_last = today - timedelta(days=1040), today - timedelta(days=541)
    assert (quiet_last - quiet_first).days + 1 == 500
    _, early = window(served, first_day, quiet_first - timedelta(days=1))
    assert early[0]["type"] == "PlanGrant"
    assert early[0]["createdAt"] == f"{first_day.isoformat()}T00:00:00.000Z"
    assert wire_balance_before(early[0]) == 0
    assert early[-1]["createdAt"] < quiet_first.isoformat()
    middle = quiet_first + timedelta(days=300)
    assert window(served, quiet_first, middle)[0] == 0
    assert window(served, middle + timedelta(days=1), quiet_last)[0] == 0
    _, resumed = window(served, quiet_last + timedelta(days=1), quiet_last + timedelta(days=30))
    assert resumed[0]["createdAt"].startswith((quiet_last + timedelta(days=1)).isoformat())
    # Activity resumes from where it left off: no hidden movement, but no zero balance either.
    assert wire_balance_before(resumed[0]) == Decimal(early[-1]["balanceAfter"]) > 0
    assert served.sim.truth("acme").hidden_movements == []


@pytest.mark.parametrize(
    ("name", "quiet_days"),
    [("quiet_at_zero_1y", 365), ("quiet_at_zero_2y", 730), ("quiet_at_zero_5y", 1826)],
)
def test_a_silence_at_zero_is_entered_at_zero_and_left_from_zero(
    start: Start, name: str, quiet_days: int
) -> None:
    """Credits expired to exactly zero, no entries for the whole stretch, then a subscription
    that starts anew with the plan's grant at midnight, from zero: no hidden movement."""
    served = start(name, now=LATE_2026)
    today = LATE_2026.date()
    quiet_first = today - timedelta(days=200 + quiet_days)
    quiet_last = today - timedelta(days=201)
    year = timedelta(days=365)
    assert window(served, quiet_first, min(quiet_first + year, quiet_last))[0] == 0
    assert window(served, max(quiet_last - year, quiet_first), quiet_last)[0] == 0
    _, early = window(served, quiet_first - timedelta(days=5), quiet_first - timedelta(days=1))
    last = early[-1]
    assert (last["type"], Decimal(last["balanceAfter"])) == ("Expiry", Decimal(0))
    _, resumed = window(served, quiet_last + timedelta(days=1), quiet_last + timedelta(days=1))
    first = resumed[0]
    assert first["createdAt"] == f"{(quiet_last + timedelta(days=1)).isoformat()}T00:00:00.000Z"
    assert first["type"] == "PlanGrant" and wire_balance_before(first) == 0
    assert served.sim.truth("acme").hidden_movements == []


def test_a_silence_not_at_zero_resumes_from_its_balance(start: Start) -> None:
    served = start("quiet_not_at_zero_2y", now=LATE_2026)
    today = LATE_2026.date()
    quiet_first, quiet_last = today - timedelta(days=930), today - timedelta(days=201)
    _, early = window(served, quiet_first - timedelta(days=5), quiet_first - timedelta(days=1))
    _, resumed = window(served, quiet_last + timedelta(days=1), quiet_last + timedelta(days=5))
    assert wire_balance_before(resumed[0]) == Decimal(early[-1]["balanceAfter"]) > 0


@pytest.mark.parametrize("ranges", [[(5, 10)], [(-3, -1)]])
def test_quiet_days_refuse_backward_ranges(ranges: list[tuple[int, int]]) -> None:
    with pytest.raises(ValidationError, match="quiet_days"):
        Scenario.named("small").with_company("acme", quiet_days=ranges)


def test_quiet_days_still_to_come_begin_when_the_clock_reaches_them(start: Start) -> None:
    """A stretch counted from the future (negative days ago): a company that goes silent later,
    as a runaway agent's account does once it has drained it."""
    served = start(Scenario.named("small").with_company("acme", quiet_days=[(-2, -4)]))
    sim = served.sim
    sim.clock.advance(timedelta(days=5))
    days = {e["createdAt"].date() for e in sim.truth("acme").entries}
    first_quiet = sim.clock.now.date() - timedelta(days=3)
    assert first_quiet - timedelta(days=1) in days
    assert not {first_quiet + timedelta(days=n) for n in range(3)} & days
    assert sim.clock.now.date() in days


def test_the_demo_has_findings_in_acme_only(demo: Simulator) -> None:
    truth = demo.truth("acme")
    entries = truth.entries
    by_gap = {m.gap: m for m in truth.hidden_movements}
    assert sorted(by_gap) == sorted(Decimal(x) for x in ("42.5", "-12.75", "8.125", "-19.5"))
    assert by_gap[Decimal("42.5")].position == 100_000
    in_tie = by_gap[Decimal("-12.75")]
    assert in_tie.before_created_at == in_tie.after_created_at
    boundary = by_gap[Decimal("8.125")]
    day = (NOW - timedelta(days=45)).date()
    assert boundary.before_created_at is not None and boundary.after_created_at is not None
    assert boundary.before_created_at.date() == day < boundary.after_created_at.date()
    at_end = by_gap[Decimal("-19.5")]
    assert at_end.at_end and at_end.position == entries[-1]["position"]
    assert truth.balance == entries[-1]["balanceAfter"] + Decimal("-19.5")
    (mismatch,) = truth.breakdown_mismatches
    assert mismatch.delta == Decimal("7.5")
    assert mismatch.served == mismatch.expected + Decimal("7.5")
    assert (mismatch.agent_id, mismatch.campaign_id, mismatch.channel) == sorted(
        truth.breakdown, key=lambda key: tuple(part or "" for part in key)
    )[3]
    globex = demo.truth("globex")
    assert globex.hidden_movements == [] and globex.breakdown_mismatches == []


def test_no_two_placements_share_a_gap_whatever_the_day() -> None:
    """The "hidden_movements" scenario's four movements stay four breaks on every day: its
    history is drawn back from now, and on 2026-12-04 its third tie group began at entry 100,
    where its after-index movement lands (the two then merged into one gap of 14.5)."""
    for days in range(0, 40, 3):
        now = datetime(2026, 12, 4, 19, 55, tzinfo=UTC) + timedelta(days=days)
        truth = Simulator(Scenario.named("hidden_movements"), now=now).truth("acme")
        positions = [m.position for m in truth.hidden_movements]
        assert len(positions) == len(set(positions)) == 4, (now, positions)
        tied = [m for m in truth.hidden_movements if m.gap == Decimal("-10.5")]
        assert [m.before_created_at == m.after_created_at for m in tied] == [True], now
