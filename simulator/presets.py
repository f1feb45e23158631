"""Named scenarios: the demo's default, a fast one for tests, and one per variant tests need."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from simulator.scenario import (
    BreakdownMismatchSpec,
    CompanySpec,
    HiddenMovementSpec,
    Scenario,
    SchemaDrift,
    SubscriptionChange,
)


def default() -> Scenario:
    """The demo: acme with 2 years at ~200/day, and a smaller globex."""
    return Scenario(
        name="default",
        companies=[
            CompanySpec(name="acme", history_days=730, entries_per_day=200),
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


def million() -> Scenario:
    """About a million entries over 2 years, for benchmarks."""
    return Scenario(
        name="million",
        companies=[CompanySpec(name="acme", history_days=730, entries_per_day=1370)],
    )


PRESETS: dict[str, Callable[[], Scenario]] = {
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
    "million": million,
}
