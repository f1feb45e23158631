"""The real pipeline end to end: simulator -> creditlens sync (with reconciliation) -> report.

The simulator plants hidden movements and hostile campaign names; the report must show exactly the
movements the simulator's ground truth holds, statements that an independent query of the synced
ledger agrees with, and names that show as text.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from dashboards import paths
from dashboards.site import build_site
from pipelines.config.settings import Settings
from simulator import HiddenMovementSpec, Scenario
from tests.conftest import Simulated, serving, synced_once
from tests.dashboards.cdp import Chromium
from tests.dashboards.pages import MOVEMENTS, money, read_page
from tests.dashboards.test_report_statement import FIGURES, independent_statements

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Simulated, Settings]]:
    """Synced once for both tests: they only read the warehouse, each building its own site."""
    movements = [
        HiddenMovementSpec(amount=Decimal("25"), after_index=100),
        HiddenMovementSpec(amount=Decimal("5.125"), day_boundary_days_ago=40),
        HiddenMovementSpec(amount=Decimal("-7.25"), at_end=True),
    ]
    scenario = Scenario.named("hostile_names").with_company("acme", hidden_movements=movements)
    with serving(scenario) as s:
        settings = synced_once(s, tmp_path_factory.mktemp("end-to-end"))
        yield s, settings


@pytest.mark.slow
def test_synced_warehouse_gives_a_faithful_report(
    synced: tuple[Simulated, Settings], tmp_path: Path
) -> None:
    s, settings = synced
    site = build_site(settings.warehouse, tmp_path / "reports", lock_timeout_s=60)
    assert site.accounts == (s.company,)
    truth = s.sim.truth(s.company)

    expected = independent_statements(settings.warehouse)
    assert expected, "the reconciliation filled ledger_enriched"
    for (account, month), figures in expected.items():
        path = site.out_dir / paths.statement(account, month, "csv")
        with path.open(newline="", encoding="utf-8") as handle:
            (row,) = list(csv.DictReader(handle))
        assert {name: Decimal(row[name]) for name in FIGURES} == {
            name: figures[name] for name in FIGURES
        }, month
    # Every movement counts in its day, the one after the last entry too: statements tie out.
    hidden = sum((figures["hidden_movements"] for figures in expected.values()), Decimal(0))
    assert hidden == sum((m.gap for m in truth.hidden_movements), Decimal(0))

    page = read_page(site.out_dir / paths.reconciliation(s.company))
    movements = page.exact(MOVEMENTS)
    assert sorted(money(m["Gap"]) for m in movements) == sorted(
        m.gap for m in truth.hidden_movements
    )
    after = [m for m in movements if m["Placement"] == "after the last entry, against /Consumption"]
    assert [money(m["Gap"]) for m in after] == [m.gap for m in truth.hidden_movements if m.at_end]

    for page in site.pages:
        assert HOSTILE not in page.read_text(encoding="utf-8"), page
    titles = [
        read_page(p).title
        for p in site.pages
        if p.parent.name == "campaigns" and p.name != "index.html"
    ]
    assert any(HOSTILE in t for t in titles) and any("Winter renewals" in t for t in titles)


@pytest.mark.slow
@pytest.mark.browser
def test_synced_report_renders_clean_in_chromium(
    synced: tuple[Simulated, Settings], chromium: Chromium, tmp_path: Path
) -> None:
    s, settings = synced
    site = build_site(settings.warehouse, tmp_path / "reports", lock_timeout_s=60)
    campaigns = site.out_dir / paths.dimension_index(s.company, "campaign_id")
    for page in (site.index_html, site.overviews[s.company], campaigns):
        events = chromium.open(Path(page).as_uri())
        assert events.problems == [] and events.dialogs == [], page
        assert chromium.evaluate("document.querySelectorAll('.plot').length") == (
            chromium.evaluate("document.querySelectorAll('.plot.js-plotly-plot').length")
        )
    assert HOSTILE in chromium.evaluate("document.body.innerText")
