"""Named scenarios: the demo's default, a fast one for tests, and one per variant tests need."""

from __future__ import annotations

from decimal import Decimal

from simulator.scenario import (
    PRESETS,
    BreakdownMismatchSpec,
    CompanySpec,
    HiddenMovementSpec,
    Scenario,
    SchemaDrift,
    SpendSpikeSpec,
    SubscriptionChange,
    TopUpSpec,
)

# What the demo should find in acme: one hidden movement of each placement, both signs, exact
# decimals, and one breakdown item that disagrees with the ledger. globex stays clean.
DEMO_HIDDEN_MOVEMENTS = (
    HiddenMovementSpec(amount=Decimal("42.5"), after_index=100_000),
    HiddenMovementSpec(amount=Decimal("-12.75"), tie_group=500),
    HiddenMovementSpec(amount=Decimal("8.125"), day_boundary_days_ago=45),
    HiddenMovementSpec(amount=Decimal("-19.5"), at_end=True),
)
DEMO_BREAKDOWN_MISMATCH = BreakdownMismatchSpec(delta=Decimal("7.5"), item=3)


def default() -> Scenario:
    """The demo: acme with 2 years at ~200/day and things to find, and a smaller, clean globex."""
    return Scenario(
        name="default",
        companies=[
            CompanySpec(
                name="acme",
                history_days=730,
                entries_per_day=200,
                hidden_movements=list(DEMO_HIDDEN_MOVEMENTS),
                breakdown_mismatches=[DEMO_BREAKDOWN_MISMATCH],
                # yesterday, one agent spends eight times its usual: the demo's spend anomaly.
                # A day is judged once the ledger has an entry of a later day, so in the minutes
                # after midnight UTC, before today's first entry, the day judged is the one
                # before yesterday: the same spike there keeps the anomaly in the demo at any hour
                spend_spikes=[
                    SpendSpikeSpec(days_ago=1, factor=8.0),
                    SpendSpikeSpec(days_ago=2, factor=8.0),
                ],
            ),
            CompanySpec(
                name="globex",
                history_days=365,
                entries_per_day=30,
                agents=3,
                campaigns=3,
                plan="Starter",
                channels=["Chat", "SMS", "WhatsApp"],
            ),
        ],
    )


def _small_company(name: str = "acme") -> CompanySpec:
    return CompanySpec(
        name=name,
        history_days=90,
        entries_per_day=40,
        agents=4,
        campaigns=3,
        tie_rate=0.05,
        identical_pairs_per_day=0.1,
    )


def small() -> Scenario:
    """Fast tests: one company, ~90 days at ~40/day, ties and identical pairs."""
    return Scenario(name="small", companies=[_small_company()])


def two_companies() -> Scenario:
    """Isolation tests: two small companies with their own keys and data."""
    globex = _small_company("globex").model_copy(
        update={"entries_per_day": 15.0, "channels": ["Chat", "Email"], "plan": "Starter"}
    )
    return Scenario(name="two_companies", companies=[_small_company(), globex])


def hidden_movements() -> Scenario:
    """One hidden movement of each placement, both signs."""
    movements = [
        HiddenMovementSpec(amount=Decimal("25"), after_index=100),
        HiddenMovementSpec(amount=Decimal("-10.5"), tie_group=3),
        HiddenMovementSpec(amount=Decimal("5.125"), day_boundary_days_ago=40),
        HiddenMovementSpec(amount=Decimal("-7.25"), at_end=True),
    ]
    return (
        small()
        .with_company("acme", hidden_movements=movements)
        .with_overrides(name="hidden_movements")
    )


def unsigned() -> Scenario:
    return small().with_overrides(name="unsigned", sign_convention="unsigned")


def oldest_first() -> Scenario:
    return small().with_overrides(name="oldest_first", entry_order="oldest_first")


def datetime_range() -> Scenario:
    """Range as ISO date-times under other parameter names."""
    return small().with_overrides(
        name="datetime_range", range_format="datetime", range_params=("from", "to")
    )


def breakdown_mismatch() -> Scenario:
    mismatch = [BreakdownMismatchSpec(delta=Decimal("12.5"), item=0)]
    return (
        small()
        .with_company("acme", breakdown_mismatches=mismatch)
        .with_overrides(name="breakdown_mismatch")
    )


def schema_drift() -> Scenario:
    drift = SchemaDrift(
        extra_entry_fields={"currency": "credits", "ledgerVersion": 2, "meta": None},
        extra_envelope_fields={"hasMore": None, "apiVersion": "v1.1"},
        omit_nulls=True,
        null_descriptions=True,
    )
    return small().with_overrides(
        name="schema_drift", drift=drift, summary_fields={"balance": "currentBalance"}
    )


def hostile_names() -> Scenario:
    names = ["Winter renewals", "<script>alert(1)</script>", '=HYPERLINK("http://x")']
    return small().with_company("acme", campaign_names=names).with_overrides(name="hostile_names")


def plan_change() -> Scenario:
    """Successive simulated days see the plan upgraded, then the subscription past due."""
    changes = [
        SubscriptionChange(offset_days=1, plan="Scale"),
        SubscriptionChange(offset_days=2, status="PastDue"),
    ]
    return (
        small()
        .with_company("acme", subscription_changes=changes)
        .with_overrides(name="plan_change")
    )


def long_history() -> Scenario:
    """History discovery: one company whose history starts 1360 days back (about 3.7 years), at
    a modest ~8/day so probing the whole of it stays fast."""
    return Scenario(
        name="long_history",
        companies=[CompanySpec(name="acme", history_days=1360, entries_per_day=8)],
    )


def dormant_start() -> Scenario:
    """History discovery past a gap: 60 active days about 3 years back, then 500 days with no
    entries at all (days 1040..541 ago), then activity again up to now. The first entry after
    the gap has a non-zero balance before it, so it is not where history begins."""
    company = CompanySpec(
        name="acme", history_days=1100, entries_per_day=8, quiet_days=[(1040, 541)]
    )
    return Scenario(name="dormant_start", companies=[company])


def _quiet(name: str, quiet_days: int, at_zero: bool) -> Scenario:
    """60 active days, then ``quiet_days`` with no entries at all, then 200 active days up to
    now (~8/day): a company that went silent and came back."""
    company = CompanySpec(
        name="acme",
        history_days=60 + quiet_days + 200,
        entries_per_day=8,
        quiet_days=[(200 + quiet_days, 201)],
        quiet_at_zero=at_zero,
    )
    return Scenario(name=name, companies=[company])


def quiet_at_zero_1y() -> Scenario:
    """Silent at zero for 365 days: shorter than a 366-day window, so no whole window is empty
    (the neighbour that the old discovery already read whole)."""
    return _quiet("quiet_at_zero_1y", 365, at_zero=True)


def quiet_at_zero_2y() -> Scenario:
    """Trial credits expired to exactly zero, two years of silence, then a subscription that
    starts from zero: a whole 366-day window is empty below an entry whose balance before is 0,
    where the old discovery stopped and dropped the first 60 days."""
    return _quiet("quiet_at_zero_2y", 730, at_zero=True)


def quiet_at_zero_5y() -> Scenario:
    """The same with five years of silence: four whole windows empty."""
    return _quiet("quiet_at_zero_5y", 1826, at_zero=True)


def quiet_not_at_zero_2y() -> Scenario:
    """Two years of silence at a non-zero balance: the balance before the entry after it says
    more came before (the neighbour the old discovery read whole)."""
    return _quiet("quiet_not_at_zero_2y", 730, at_zero=False)


def opening_balance() -> Scenario:
    """A movement before the first entry: the ledger starts at 1234.5 with no entry for it."""
    return (
        small()
        .with_company("acme", opening_balance=Decimal("1234.5"))
        .with_overrides(name="opening_balance")
    )


def million() -> Scenario:
    """About a million entries over 2 years, for benchmarks."""
    return Scenario(
        name="million",
        companies=[CompanySpec(name="acme", history_days=730, entries_per_day=1370)],
    )


def alerts() -> Scenario:
    """What alerts are for: burnco burns toward zero with no automatic top-up (low balance,
    short runway); spikeco's first agent spends eight times its usual yesterday, and a movement
    no entry explains ends its ledger (another, long ago, is history, not news); topupco, low
    today, is topped up tomorrow (advance the clock a day: the balance recovers)."""
    burning = CompanySpec(
        name="burnco", history_days=70, entries_per_day=200, agents=3, campaigns=2,
        plan="Starter", auto_top_up=False, top_ups=[TopUpSpec(days_ago=69, amount=Decimal(5000))],
    )  # fmt: skip
    spiking = _small_company("spikeco").model_copy(
        update={
            "spend_spikes": [SpendSpikeSpec(days_ago=1, factor=8.0, agent=0)],
            "hidden_movements": [
                HiddenMovementSpec(amount=Decimal("12.25"), after_index=200),  # long ago
                HiddenMovementSpec(amount=Decimal("-35.5"), at_end=True),
            ],
        }
    )
    topping = CompanySpec(
        name="topupco", history_days=20, entries_per_day=40, agents=2, campaigns=2,
        plan="Starter", auto_top_up=False, top_ups=[TopUpSpec(days_ago=-1, amount=Decimal(20000))],
    )  # fmt: skip
    return Scenario(name="alerts", companies=[burning, spiking, topping])


PRESETS.update(
    {
        "default": default,
        "small": small,
        "two_companies": two_companies,
        "hidden_movements": hidden_movements,
        "unsigned": unsigned,
        "oldest_first": oldest_first,
        "datetime_range": datetime_range,
        "breakdown_mismatch": breakdown_mismatch,
        "schema_drift": schema_drift,
        "hostile_names": hostile_names,
        "plan_change": plan_change,
        "long_history": long_history,
        "dormant_start": dormant_start,
        "quiet_at_zero_1y": quiet_at_zero_1y,
        "quiet_at_zero_2y": quiet_at_zero_2y,
        "quiet_at_zero_5y": quiet_at_zero_5y,
        "quiet_not_at_zero_2y": quiet_not_at_zero_2y,
        "opening_balance": opening_balance,
        "million": million,
        "alerts": alerts,
    }
)
