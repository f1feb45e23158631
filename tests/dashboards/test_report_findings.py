"""Findings end to end: simulator -> creditlens sync -> creditlens breaks ack -> creditlens report.

The simulator plants one hidden movement of every placement (and a balance before the first
entry) and, apart, a breakdown item that differs from the ledger; the reconciliation page must
list each movement with its placement and exact gap, say which one someone acknowledged and why,
and keep the breakdown's credits of usage in a section of their own, out of the movements' sums.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from dashboards import paths
from dashboards.money import money_text
from dashboards.site import SiteResult, build_site
from pipelines.cli.breaks_command import acknowledge, findings
from pipelines.cli.report_command import run_report
from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from simulator import Scenario
from simulator.truth import HiddenMovement
from tests.conftest import Simulated
from tests.dashboards.conftest import Built
from tests.dashboards.pages import MISMATCHES, MOVEMENTS, money, read_page
from tests.dashboards.warehouse_factory import BREAKDOWN_EXTRA, MAIN, MISREPORTED

Start = Callable[..., Simulated]
Env = Callable[..., Settings]
OPENING = Decimal("1234.5")
REASON = "Manual grant by support, ticket 981"


def _placement(movement: HiddenMovement) -> str:
    """The simulator's movement in the report's words for its placement."""
    if movement.before_created_at is None:
        return "before the first entry"
    if movement.after_created_at is None:
        return "after the last entry, against /Consumption"
    if movement.before_created_at == movement.after_created_at:
        return "inside a tie (same createdAt)"
    return "between two entries"


def _report(settings: Settings, company: str) -> tuple[SiteResult, list[dict[str, str]]]:
    """`creditlens report`, and the movements its reconciliation page lists (no table: none)."""
    site = run_report(settings, None, None, None)
    page = read_page(site.out_dir / paths.reconciliation(company))
    return site, page.exact(MOVEMENTS) if MOVEMENTS in page.tables else []


@pytest.mark.slow
def test_every_movement_its_acknowledgement_and_the_mismatch_apart(
    simulated: Start, creditlens_env: Env
) -> None:
    mismatch = Scenario.named("breakdown_mismatch").company("acme").breakdown_mismatches
    scenario = Scenario.named("hidden_movements").with_company(
        "acme", opening_balance=OPENING, breakdown_mismatches=mismatch
    )
    s = simulated(scenario)
    settings = creditlens_env(s)
    run_sync(settings, None, None)
    truth = s.sim.truth(s.company)
    assert len(truth.hidden_movements) == 5

    _, before = _report(settings, s.company)
    assert [m["Acknowledged"] for m in before] == ["no"] * 5
    grant = next(m for m in before if money(m["Gap"]) == Decimal(25))
    acknowledge(settings, grant["Break id"], REASON, ack=True)
    site, movements = _report(settings, s.company)
    reader = read_page(site.out_dir / paths.reconciliation(s.company))

    # Every movement, with its placement and its exact gap.
    assert sorted((m["Placement"], money(m["Gap"])) for m in movements) == sorted(
        (_placement(m), m.gap) for m in truth.hidden_movements
    )
    listed = {f.break_id for f in findings(settings) if f.placement != "breakdown"}
    assert {m["Break id"] for m in movements} == listed
    (acknowledged,) = [m for m in movements if m["Acknowledged"] != "no"]
    assert acknowledged["Break id"] == grant["Break id"]
    assert acknowledged["Acknowledged"].startswith(f"yes — {REASON} (")
    opening = next(m for m in movements if m["Placement"] == "before the first entry")
    assert money(opening["Gap"]) == OPENING and money(opening["Expected"]) == 0

    gross = sum((abs(m.gap) for m in truth.hidden_movements), Decimal(0))
    net = sum((m.gap for m in truth.hidden_movements), Decimal(0))
    assert (
        f"5 hidden movement(s): gross {money_text(gross)} credits (the sum of |gap|), net "
        f"{money_text(net)}; 1 acknowledged, 4 not."
    ) in reader.text
    # Where the history begins: the balance before the first entry, and that it is a finding.
    assert "Balance before it 1,234.50" in reader.text
    assert f"one of the hidden movements below, {opening['Break id']}" in reader.text

    # The breakdown's difference: its own section, its own unit, never in the movements' sums.
    (item,) = reader.exact(MISMATCHES)
    (planted,) = truth.breakdown_mismatches
    assert money(item["Difference"]) == planted.delta
    assert item["Item (agent / campaign / channel)"] == " / ".join(
        v or "—" for v in (planted.agent_id, planted.campaign_id, planted.channel)
    )
    assert "Credits of usage in the current period; not balance movements." in reader.text


@pytest.mark.slow
def test_an_acknowledged_mismatch_stays_listed_apart_from_movements(
    simulated: Start, creditlens_env: Env
) -> None:
    s = simulated("breakdown_mismatch")
    settings = creditlens_env(s)
    run_sync(settings, None, None)
    (finding,) = findings(settings)
    acknowledge(settings, finding.break_id, "The platform counts a retried call twice", ack=True)
    site, movements = _report(settings, s.company)
    assert movements == []
    reader = read_page(site.out_dir / paths.reconciliation(s.company))
    assert "No hidden movements: every balance change" in reader.text
    (item,) = reader.exact(MISMATCHES)
    assert item["Break id"] == finding.break_id
    assert item["Acknowledged"].startswith("yes — The platform counts a retried call twice (")
    assert "1 item(s) differ, by 12.50 credits of usage in all; 1 acknowledged, 0 not." in (
        reader.text
    )
    overview = read_page(site.overviews[s.company]).text
    assert "Hidden movements none" in overview
    assert "Breakdown mismatches 1 item(s), credits of usage, not movements" in overview


@pytest.mark.slow
def test_history_left_out_of_the_sync_is_said_not_counted(
    simulated: Start, creditlens_env: Env
) -> None:
    """--since after the first day: the balance carried in is no movement, and the page says so."""
    s = simulated("small")
    settings = creditlens_env(s)
    run_sync(settings, (s.first_day + timedelta(days=30)).isoformat(), None)
    site, movements = _report(settings, s.company)
    assert all(m["Placement"] != "before the first entry" for m in movements)
    reader = read_page(site.out_dir / paths.reconciliation(s.company))
    assert f"First entry {s.first_day.isoformat()}" in reader.text  # where discovery found it
    assert "Skipped: History of account acme from " in reader.text
    assert "Not a finding: those days were left out of the sync on purpose." in reader.text
    overview = read_page(site.overviews[s.company]).text
    assert "(earlier days left out of the sync, their balance carried in)" in overview


def test_a_warehouse_from_before_finding_ids_still_shows_its_findings(
    built: Built, tmp_path: Path
) -> None:
    """Version 5: no hidden_movements, no breakdown_mismatches, breakdown rows in balance_breaks."""
    warehouse = tmp_path / "v5.duckdb"
    warehouse.write_bytes(built.fixture.path.read_bytes())
    con = duckdb.connect(str(warehouse))
    con.execute("DROP VIEW hidden_movements")
    for table in ("breakdown_mismatches", "ledger_history", "break_acknowledgements"):
        con.execute(f"DROP TABLE {table}")
    for column in ("break_id", "placement", "observed_on"):
        con.execute(f"ALTER TABLE balance_breaks DROP COLUMN {column}")
    for column in ("hidden_movements", "hidden_gross", "hidden_net", "unacknowledged"):
        con.execute(f"ALTER TABLE reconciliation_runs DROP COLUMN {column}")
    con.execute("ALTER TABLE reconciliation_runs DROP COLUMN opening_status")
    con.execute("ALTER TABLE reconciliation_runs DROP COLUMN opening_message")
    con.execute(
        "INSERT INTO balance_breaks (account, kind, break_start, break_end, expected_balance, "
        "observed_balance, gap, agent_id, campaign_id, channel, detail, run_id, checked_at) "
        "SELECT account, 'breakdown', NULL, NULL, 10, 11.5, 1.5, ?, ?, ?, 'old breakdown row', "
        "run_id, checked_at FROM balance_breaks WHERE account = ? LIMIT 1",
        [*MISREPORTED, MAIN],
    )
    con.close()
    site = build_site(warehouse, tmp_path / "site", account=MAIN, lock_timeout_s=60)
    assert any("before findings had ids" in n for n in site.notices)
    reader = read_page(site.out_dir / paths.reconciliation(MAIN))
    movements = reader.exact(MOVEMENTS)
    assert sorted(m["Placement"] for m in movements) == [
        "after the last entry, against /Consumption",
        "between two entries",
        "between two entries",
    ]
    assert {m["Break id"] for m in movements} == {"—"}
    assert {m["Acknowledged"] for m in movements} == {"—"}
    (item,) = reader.exact(MISMATCHES)
    assert money(item["Difference"]) == BREAKDOWN_EXTRA
    assert "The opening balance was not checked" in reader.text
