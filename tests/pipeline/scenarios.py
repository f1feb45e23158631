"""Companies that went quiet, with short active stretches around the silence, for syncs.

A sync costs about the same per day of history whatever the day holds (the ledger's assets are
partitioned by day; an empty day costs as much as a busy one), so the presets' 60 active days
before a silence and 200 after it cost seconds and prove nothing the silence does not. These
keep each preset's point (how long the silence is, where it sits among discovery's 366-day
windows counted back from today, the balance it is spent at, ~8 entries a day) with 10 active
days before it and 30 after it: the silence still starts inside the newest window, so which
windows are wholly empty is what it is in the preset each one stands in for (the three-year
one stands in for the five-year preset: see its docstring).
"""

from __future__ import annotations

from simulator import Scenario
from simulator.scenario import CompanySpec

BEFORE = 10  # active days before the silence: its first entries, the ones an early stop misses
AFTER = 30  # active days after it, up to today: the newest window is never empty


def went_quiet(name: str, quiet_days: int, *, at_zero: bool) -> Scenario:
    """``BEFORE`` active days, ``quiet_days`` with no entries at all (at a zero balance, or at
    the balance the last day left), then ``AFTER`` active days up to now."""
    company = CompanySpec(
        name="acme",
        history_days=BEFORE + quiet_days + AFTER,
        entries_per_day=8,
        quiet_days=[(AFTER + quiet_days, AFTER + 1)],
        quiet_at_zero=at_zero,
    )
    return Scenario(name=name, companies=[company])


def quiet_at_zero_1y() -> Scenario:
    """Silent at zero for 365 days: shorter than a window, so no whole window is empty."""
    return went_quiet("quiet_at_zero_1y", 365, at_zero=True)


def quiet_at_zero_2y() -> Scenario:
    """Two years silent at zero: the window 366..731 days back is wholly inside the silence."""
    return went_quiet("quiet_at_zero_2y", 730, at_zero=True)


def quiet_at_zero_3y() -> Scenario:
    """Three years silent at zero: two consecutive windows (366..1097 days back) wholly empty,
    the several-windows case the preset's five years (four windows) makes with 1,000 more days
    to sync."""
    return went_quiet("quiet_at_zero_3y", 1095, at_zero=True)


def quiet_not_at_zero_2y() -> Scenario:
    """Two years silent at a non-zero balance: the entry after it says more came before."""
    return went_quiet("quiet_not_at_zero_2y", 730, at_zero=False)


def dormant_start() -> Scenario:
    """The ``dormant_start`` preset's 500 silent days at a non-zero balance, between 10 active
    days and 30 (the preset: 60 and 540). As in the preset, no whole window is inside the
    silence (days 31..530 back here, 541..1040 there): it is the balance, not an empty window,
    that says more came before."""
    company = CompanySpec(
        name="acme", history_days=BEFORE + 500 + AFTER, entries_per_day=8,
        quiet_days=[(AFTER + 500, AFTER + 1)],
    )  # fmt: skip
    return Scenario(name="dormant_start", companies=[company])
