"""Reconciliation end to end: simulator scenarios with known hidden movements, through the real
sync, into balance_breaks. Exactly the injected movements are found, with exact gaps, and
nothing else, whatever the sign convention or the order the API returns entries in."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.cli.sync_command import run_sync
from pipelines.cli.sync_report import SyncReport
from pipelines.config.settings import Settings
from simulator import HiddenMovementSpec, Scenario, SubscriptionChange
from tests.conftest import Simulated, serving
from tests.pipeline.helpers import cli, cli_in_process, copy_folder, sync_into, table

Start = Callable[..., Simulated]
Env = Callable[..., Settings]
Synced = tuple[Simulated, Settings, SyncReport]
Hidden = Callable[[str, str, str], Synced]

BREAKS = (
    "SELECT kind, break_start, break_end, gap, expected_balance, observed_balance, "
    "agent_id, campaign_id, channel, ambiguous FROM balance_breaks ORDER BY kind, break_end"
)


def expected_continuity(s: Simulated) -> list[tuple]:
    truth = s.sim.truth(s.company)
    return sorted(
        (m.before_created_at, m.after_created_at, m.gap)
        for m in truth.hidden_movements
        if not m.at_end
    )


def found(settings: Settings, kind: str) -> list[tuple]:
    rows = table(settings.warehouse, BREAKS)
    return sorted((r[1], r[2], r[3]) for r in rows if r[0] == kind)


@pytest.fixture(scope="module")
def hidden(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hidden]:
    """The "hidden_movements" scenario served with a sign convention and an entry order, and
    synced once with a configured convention, for the tests that only read the result. Each
    combination is made once for the module: the api-order and statement tests read the same
    warehouses the injected-movements cases check ("signed", "newest_first" are the scenario's
    own defaults and "signed" the product's, so that one is the plain scenario)."""
    made: dict[tuple[str, str, str], Synced] = {}
    with ExitStack() as stack:

        def synced(convention: str, order: str, configured: str) -> Synced:
            key = (convention, order, configured)
            if key not in made:
                scenario = Scenario.named("hidden_movements").with_overrides(
                    sign_convention=convention, entry_order=order
                )
                s = stack.enter_context(serving(scenario))
                folder = tmp_path_factory.mktemp("hidden")
                settings, report = sync_into(s, folder, CREDITLENS_SIGN_CONVENTION=configured)
                made[key] = (s, settings, report)
            return made[key]

        yield synced


@pytest.mark.slow
@pytest.mark.parametrize(
    ("convention", "order", "configured"),
    [
        ("signed", "newest_first", "signed"),
        ("signed", "oldest_first", "signed"),
        ("unsigned", "newest_first", "unsigned"),
        ("unsigned", "oldest_first", "infer"),
    ],
)
def test_exactly_the_injected_movements_are_found(
    hidden: Hidden, convention: str, order: str, configured: str
) -> None:
    s, settings, report = hidden(convention, order, configured)
    want = expected_continuity(s)
    assert len(want) == 3  # after an index, inside a tie group, at a day boundary
    assert found(settings, "continuity") == want
    truth = s.sim.truth(s.company)
    at_end = [m for m in truth.hidden_movements if m.at_end]
    summary = table(
        settings.warehouse,
        "SELECT break_start, break_end, expected_balance, observed_balance, gap "
        "FROM balance_breaks WHERE kind = 'summary'",
    )
    assert summary == [
        (
            at_end[0].before_created_at,
            None,
            at_end[0].expected_balance,
            truth.balance,
            at_end[0].gap,
        )
    ]
    assert found(settings, "breakdown") == []
    runs = table(
        settings.warehouse, "SELECT sign_convention, sign_inferred FROM reconciliation_runs"
    )
    assert runs == [(convention, configured == "infer")]
    assert any(g > 0 for _, _, g in want) and any(g < 0 for _, _, g in want)
    meta = report.reconciliation.materializations["balance_breaks"]
    assert meta["breaks_continuity"] == 3 and meta["breaks_summary"] == 1


@pytest.mark.slow
def test_the_api_order_changes_nothing(hidden: Hidden) -> None:
    results = []
    for order in ("newest_first", "oldest_first"):
        _, settings, _ = hidden("signed", order, "signed")  # each order its own warehouse
        results.append(
            (
                table(settings.warehouse, BREAKS),
                table(
                    settings.warehouse, "SELECT * EXCLUDE (run_id) FROM daily_balance ORDER BY day"
                ),
                table(
                    settings.warehouse,
                    "SELECT entry_id, chain_position FROM ledger_enriched ORDER BY chain_position",
                ),
            )
        )
    assert results[0] == results[1]


@pytest.mark.slow
def test_a_break_at_a_366_day_window_boundary(simulated: Start, creditlens_env: Env) -> None:
    history = 400
    boundary_days_ago = history - 366  # the last day of the first 366-day window
    movement = HiddenMovementSpec(amount=Decimal("3.3"), day_boundary_days_ago=boundary_days_ago)
    scenario = Scenario.named("small").with_company(
        "acme", history_days=history, entries_per_day=4, hidden_movements=[movement]
    )
    s = simulated(scenario)
    settings = creditlens_env(s)
    report = run_sync(settings, None, None)
    assert report.ledger.materializations["ledger_entries"]["windows"] == 3  # 366, 33, today
    want = expected_continuity(s)
    assert len(want) == 1
    start, end, gap = want[0]
    assert end.date() - start.date() >= timedelta(days=1)
    assert start.date() == s.first_day + timedelta(days=365)  # the window's last day
    assert found(settings, "continuity") == want and gap == Decimal("3.3")


@pytest.mark.slow
def test_a_breakdown_disagreement_is_found_per_item(simulated: Start, creditlens_env: Env) -> None:
    s = simulated("breakdown_mismatch")
    settings = creditlens_env(s)
    run_sync(settings, None, None)
    truth = s.sim.truth(s.company)
    [mismatch] = truth.breakdown_mismatches
    rows = table(
        settings.warehouse,
        "SELECT agent_id, campaign_id, channel, ledger_credits, breakdown_credits, difference "
        "FROM breakdown_mismatches",
    )
    assert rows == [
        (
            mismatch.agent_id,
            mismatch.campaign_id,
            mismatch.channel,
            mismatch.expected,
            mismatch.served,
            mismatch.delta,
        )
    ]
    assert found(settings, "continuity") == [] and found(settings, "summary") == []


@pytest.mark.slow
def test_statement_identity_and_it_equals_sql_over_the_ledger(hidden: Hidden) -> None:
    s, settings, _ = hidden("signed", "newest_first", "signed")  # the plain scenario
    months = table(
        settings.warehouse,
        "SELECT month, opening, debits, credits, refunds, adjustments, other, hidden_movements, "
        "closing FROM monthly_statement ORDER BY month",
    )
    assert len(months) >= 3
    for month, opening, *moves, closing in months:
        assert opening + sum(moves) == closing, month
    for previous, current in itertools.pairwise(months):
        assert current[1] == previous[-1]  # each opening is the previous closing
    by_sql = table(
        settings.warehouse,
        "SELECT date_trunc('month', created_at)::DATE AS month, "
        "coalesce(sum(signed_amount) FILTER (category = 'debit'), 0), "
        "coalesce(sum(signed_amount) FILTER (category = 'credit'), 0), "
        "coalesce(sum(signed_amount) FILTER (category = 'refund'), 0) "
        "FROM ledger_enriched GROUP BY 1 ORDER BY 1",
    )
    assert [(m[0], m[2], m[3], m[4]) for m in months] == by_sql
    # Every placement counts, the one after the last entry included: the statement closes on
    # the platform's own balance.
    truth = s.sim.truth(s.company)
    hidden = sum((m[7] for m in months), Decimal(0))
    assert hidden == sum((m.gap for m in truth.hidden_movements), Decimal(0))
    assert months[-1][-1] == truth.balance


@pytest.mark.slow
def test_enriched_ledger_follows_the_subscription_in_force(
    simulated: Start, creditlens_env: Env
) -> None:
    """An entry takes the latest snapshot fetched (a real instant) at or before its createdAt
    (the simulator's). The plan changes a millisecond after the simulator starts; each clock
    move below is to the real now, so the entries of the last step fall after the snapshot that
    saw the change and on a day `--until` (the real today) reaches, at any hour."""
    upgrade = SubscriptionChange(offset_days=1 / 86_400_000, plan="Scale")
    s = simulated(Scenario.named("small").with_company("acme", subscription_changes=[upgrade]))
    settings = creditlens_env(s)
    run_sync(settings, None, None)  # the first snapshot: the plan before the change
    s.sim.clock.set(datetime.now(UTC))
    run_sync(settings, None, None)  # the upgrade observed
    s.sim.clock.set(datetime.now(UTC))
    s.sim.add_entries_now(s.company, 3)
    run_sync(settings, None, None)
    rows = table(
        settings.warehouse,
        "SELECT plan, subscription_backfilled, count(*) FROM ledger_enriched "
        "GROUP BY ALL ORDER BY ALL",
    )
    plans = {(plan, backfilled) for plan, backfilled, _ in rows}
    assert (None, True) in plans  # before the first snapshot the plan is unknown
    assert ("Scale", False) in plans  # after the upgrade was observed
    names = table(
        settings.warehouse,
        "SELECT count(*) FILTER (campaign_id IS NOT NULL AND campaign_name IS NULL) "
        "FROM ledger_enriched",
    )
    assert names == [(0,)]


@pytest.mark.slow
def test_fail_on_breaks_sets_the_exit_code(
    hidden: Hidden, creditlens_env: Env, tmp_path: Path
) -> None:
    # A copy of the module's synced plain scenario: the summary and the gate are a rerun's as
    # much as a first sync's (its reconciliation reports every open finding), without a first
    # sync of its own.
    s, synced, _ = hidden("signed", "newest_first", "signed")
    copy_folder(synced.warehouse.parent, tmp_path)
    creditlens_env(s)
    # What the summary says needs no process of its own; the gate's exit code gets one below.
    plain = cli_in_process("sync")
    assert plain.returncode == 0, plain.stderr
    # Every placement counts, the one after the last entry included, gross and net apart.
    assert "4 hidden movement(s) (gross 47.875000, net 12.375000)" in plain.stdout
    assert re.search(r"hidden movement hm-\w{12} \(between_entries\): Balance break", plain.stdout)
    strict = cli("sync", "--fail-on-breaks")
    assert strict.returncode == 3
