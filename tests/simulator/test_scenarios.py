"""Scenarios: presets, files (YAML/JSON), overrides, and refusals of contradictory options."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import get_args

import pytest
from pydantic import BaseModel, ValidationError

from simulator import HiddenMovementSpec, Scenario, Simulator
from simulator.presets import PRESETS
from simulator.profile import build_profile
from simulator.scenario import CompanySpec, SpendSpikeSpec
from tests.simulator.conftest import NOW

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(set(PRESETS) - {"million", "default"}))
def test_every_preset_builds_and_serves_a_consistent_truth(name: str) -> None:
    sim = Simulator(Scenario.named(name), now=NOW)
    for company in sim.companies:
        truth = sim.truth(company.name)
        assert truth.entries
        assert truth.balance == truth.entries[-1]["balanceAfter"] + sum(
            (m.gap for m in truth.hidden_movements if m.at_end), Decimal(0)
        )


def test_default_is_the_demo() -> None:
    scenario = Scenario.named("default")
    acme, globex = scenario.companies
    assert (acme.name, acme.history_days, acme.entries_per_day) == ("acme", 730, 200)
    assert globex.entries_per_day < acme.entries_per_day


def test_keyword_overrides() -> None:
    scenario = Scenario.named("small", entry_order="oldest_first", range_params=("a", "b"))
    assert scenario.entry_order == "oldest_first"
    assert scenario.range_params == ("a", "b")
    assert Scenario.named("small").entry_order == "newest_first"


def test_yaml_file_from_a_preset(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "preset: small\n"
        "sign_convention: unsigned\n"
        "range_format: datetime\n"
        "companies:\n"
        "  - name: initech\n"
        "    history_days: 10\n"
        "    entries_per_day: 5\n"
        "    hidden_movements:\n"
        "      - {amount: '1.5', at_end: true}\n"
    )
    scenario = Scenario.load(path)
    assert scenario.sign_convention == "unsigned"
    (company,) = scenario.companies
    assert company.name == "initech"
    assert company.hidden_movements == [HiddenMovementSpec(amount=Decimal("1.5"), at_end=True)]
    assert Scenario.resolve(str(path)) == scenario


def test_json_file(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "j", "companies": [{"name": "x", "history_days": 3}]}))
    scenario = Scenario.load(path)
    assert scenario.name == "j"
    assert Simulator(scenario, now=NOW).truth("x").entries


def test_with_company_changes_only_that_company() -> None:
    base = Scenario.named("two_companies")
    changed = base.with_company("globex", entries_per_day=1)
    assert changed.company("globex").entries_per_day == 1
    assert changed.company("acme") == base.company("acme")
    with pytest.raises(KeyError):
        base.with_company("nobody", entries_per_day=1)


@pytest.mark.parametrize(
    "movement",
    [
        {"amount": "1"},
        {"amount": "1", "after_index": 3, "at_end": True},
        {"amount": "1", "after_index": -1},
    ],
)
def test_a_hidden_movement_needs_exactly_one_valid_placement(movement: dict) -> None:
    with pytest.raises(ValidationError):
        HiddenMovementSpec.model_validate(movement)


def test_refusals() -> None:
    with pytest.raises(KeyError, match="unknown scenario"):
        Scenario.named("nope")
    with pytest.raises(ValidationError, match="unknown plan"):
        Scenario.named("small").with_company("acme", plan="Platinum")
    with pytest.raises(ValidationError, match="unique"):
        Scenario.named("small", companies=[{"name": "a"}, {"name": "a"}])
    with pytest.raises(ValueError, match="more than 4 decimal places"):
        Simulator(
            Scenario.named("small").with_company(
                "acme", hidden_movements=[{"amount": "0.00001", "at_end": True}]
            ),
            now=NOW,
        )


def _models(model: type[BaseModel], seen: dict[str, type[BaseModel]]) -> dict[str, type]:
    """Every pydantic model a scenario file can hold, by class name, found through the fields."""
    seen[model.__name__] = model
    for info in model.model_fields.values():
        stack = [info.annotation]
        while stack:
            kind = stack.pop()
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                if kind.__name__ not in seen:
                    _models(kind, seen)
            else:
                stack.extend(get_args(kind))
    return seen


def test_the_readme_documents_every_field_of_a_scenario_file() -> None:
    text = (ROOT / "simulator" / "README.md").read_text(encoding="utf-8")
    reference = text.split("### Scenario file reference", 1)[1].split("\n## ", 1)[0]
    sections = dict(
        (head.strip(), body) for head, body in re.findall(r"\n#### ([^\n]+)\n(.*?)(?=\n#### |$)",
                                                           reference, flags=re.S)
    )  # fmt: skip
    where = {
        "Scenario": "Scenario", "CompanySpec": "Company", "KeySpec": "Key",
        "HiddenMovementSpec": "Hidden movement", "BreakdownMismatchSpec": "Breakdown mismatch",
        "SubscriptionChange": "Subscription change", "PlanSpec": "Plan", "SchemaDrift": "Drift",
        "FaultsConfig": "Faults", "FaultRates": "Faults", "FaultSpec": "Faults",
        "SpendSpikeSpec": "Spend spike", "TopUpSpec": "Top-up",
    }  # fmt: skip
    network = text.split("## Network", 1)[1].split("\n## ", 1)[0]
    missing = []
    for name, model in _models(Scenario, {}).items():
        body = network if name == "NetworkSpec" else sections[where[name]]
        missing += [f"{name}.{f}" for f in model.model_fields if f"`{f}`" not in body]
    assert not missing, missing


@pytest.mark.parametrize("hour", [0, 12])
def test_the_demos_anomaly_is_on_the_day_alerts_judge_at_any_hour(hour: int) -> None:
    """Alerts judge a day once the ledger has an entry of a later day
    (pipelines/alerts/evaluate.py): just after midnight UTC, before today's first entry, that is
    the day before yesterday, and the demo's spike must be there too."""
    now = datetime(2026, 3, 4, hour, 0, 1, tzinfo=UTC)
    scenario = Scenario.named("default").with_company("acme", history_days=5)
    sim = Simulator(scenario, now=now)
    last = max(e["createdAtText"] for e in sim.truth("acme").entries)
    judged = date.fromisoformat(last[:10]) - timedelta(days=1)
    spikes = scenario.company("acme").spend_spikes
    assert judged in {now.date() - timedelta(days=s.days_ago) for s in spikes}


def test_a_spend_spike_is_there_on_any_date() -> None:
    """A spike multiplied only what the day's draw gave its agent: on a date that gave it
    little or nothing (a quiet Sunday, an agent no campaign called), the alert tests' anomaly was
    not there, and they passed or failed by the calendar. Now the agent spends at least the
    factor times an average agent's usual day (the company's mean daily usage over the 28 days
    before: a floor from the spike day's own draw still left a quiet Sunday's spike under the
    agency alert test's bar), on every one of five weeks' dates."""
    spec = CompanySpec(
        name="acme", history_days=30, entries_per_day=40, agents=6, campaigns=1,
        spend_spikes=[SpendSpikeSpec(days_ago=1, factor=8.0, agent=0)],
    )  # fmt: skip
    agent = build_profile(0, spec).agents[0]  # in no campaign's team
    for offset in range(35):
        now = datetime(2026, 11, 1, 21, 0, tzinfo=UTC) + timedelta(days=offset)
        sim = Simulator(Scenario(name="spike", companies=[spec]), now=now)
        day = now.date() - timedelta(days=1)
        usage: dict[date, Decimal] = defaultdict(Decimal)
        spent = Decimal(0)
        for e in sim.truth("acme").entries:
            if e["type"] == "Usage":
                usage[e["createdAt"].date()] -= e["signedAmount"]
                if e["createdAt"].date() == day and e["agentId"] == agent:
                    spent -= e["signedAmount"]
        usual = sum(usage[day - timedelta(days=back)] for back in range(1, 29)) / 28
        assert spent >= usual * 8 / 6 - Decimal("0.0001") and spent > 0, (now, spent, usual)
