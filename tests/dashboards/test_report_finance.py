"""Finance's outputs on a real sync of the simulator: every table adds up, the forecast says
what it assumes, both balances are shown, a month with no data is one clear error.

Each figure is checked against an independent query of the synced DuckDB file (never against
the report's own code): statements against the chain, statement lines against the entries,
the burn against the daily balance, the balances against the snapshots.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from pathlib import Path

import duckdb
import pytest

from dashboards import paths
from dashboards.model import STATEMENT_LINES
from pipelines.cli.errors import UsageError
from pipelines.cli.report_command import run_report
from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from simulator import HiddenMovementSpec, Scenario
from tests.conftest import Simulated, serving, synced_once
from tests.dashboards.conftest import site_files
from tests.dashboards.pages import money, read_page, records
from tests.dashboards.spreadsheets import read_records
from tests.dashboards.test_report_statement import FIGURES, independent_statements
from tests.dashboards.tie_out import (
    assert_adds_up,
    assert_column_adds_up,
    assert_one_precision,
    assert_tables_have_their_csv,
    caption,
)
from tests.pipeline.helpers import cli, cli_in_process, copy_folder

Start = Callable[..., Simulated]
Env = Callable[..., Settings]
PARTS = ("Opening", "Debits", "Credits", "Refunds", "Adjustments", "Other", "Hidden movements")
LINES = """
SELECT CAST(date_trunc('month', timezone('UTC', created_at)) AS DATE), entry_type,
       count(*), sum(signed_amount)
FROM ledger_enriched WHERE account = ? GROUP BY ALL
"""
BURN = """
SELECT coalesce(-sum(debits + refunds), 0) FROM daily_balance
WHERE account = ? AND day BETWEEN ? AND ?
"""


def finance_scenario() -> Scenario:
    """A company with a campaign named as a formula, promotions and expiries every month, a
    hidden movement between entries and one after the last, and a breakdown mismatch."""
    mismatch = Scenario.named("breakdown_mismatch").company("acme").breakdown_mismatches
    movements = [
        HiddenMovementSpec(amount=Decimal("25"), after_index=100),
        HiddenMovementSpec(amount=Decimal("-7.25"), at_end=True),
    ]
    return Scenario.named("hostile_names").with_company(
        "acme",
        rare_type_rate=0.01,
        expiry_probability=1.0,
        hidden_movements=movements,
        breakdown_mismatches=mismatch,
    )


def synced_company(simulated: Start, creditlens_env: Env) -> tuple[Simulated, Settings]:
    """finance_scenario's company, synced."""
    s = simulated(finance_scenario())
    settings = creditlens_env(s)
    run_sync(settings, None, None)
    return s, settings


@pytest.fixture(scope="module")
def company(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Simulated, Settings]]:
    """finance_scenario's company, synced once for the tests below: they only read its
    warehouse, each building its own site in a folder of its own."""
    with serving(finance_scenario()) as s:
        settings = synced_once(s, tmp_path_factory.mktemp("finance"))
        yield s, settings


def _query(warehouse: Path, sql: str, params: list[object]) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


@pytest.mark.slow
def test_every_statement_adds_up_on_screen_and_equals_the_ledger(
    company: tuple[Simulated, Settings], tmp_path: Path
) -> None:
    s, settings = company
    site = run_report(settings, None, None, str(tmp_path / "reports"))
    account = s.company
    truth = independent_statements(settings.warehouse)
    overview = read_page(site.overviews[account])
    monthly = caption(overview, "Every month")
    assert_adds_up(overview, monthly, PARTS, "Closing", account)
    rows = overview.exact(monthly)
    assert {date.fromisoformat(f"{r['Month']}-01") for r in rows} == {m for _, m in truth}
    for row in rows:
        expected = truth[(account, date.fromisoformat(f"{row['Month']}-01"))]
        for title, name in zip((*PARTS, "Closing"), FIGURES, strict=True):
            assert money(row[title]) == expected[name], (row["Month"], name)
        assert int(row["Entries"].replace(",", "")) == expected["entries"]

    lines = {}
    for month, entry_type, count, amount in _query(settings.warehouse, LINES, [account]):
        lines.setdefault(month, {})[entry_type] = (count, amount)
    split = 0
    for (_, month), expected in sorted(truth.items()):
        page = read_page(site.out_dir / paths.statement(account, month))
        summary = caption(page, "Statement of ")
        by_type = caption(page, f"{month:%B %Y} by entry type")
        assert_column_adds_up(page, summary, "Amount", month)
        assert_column_adds_up(page, by_type, "Amount", month)
        # The exact figures; a "Rounding" line appears on screen only when 0.01s need it.
        shown = {
            r["Line"]: money(r["Amount"])
            for r in page.exact(summary)
            if not r["Line"].startswith("Rounding")
        }
        assert shown == {label: expected[name] for name, label in STATEMENT_LINES}
        written = read_records(
            page_dir(site.out_dir, account) / f"statement-{month:%Y-%m}-lines.csv"
        )
        typed = {w["Entry type"]: (int(w["Entries"]), Decimal(w["Amount"])) for w in written[1:-2]}
        assert typed == lines[month], month
        other = {
            w["Entry type"]: Decimal(w["Amount"]) for w in written if w["Line"] == "Other movements"
        }
        if other.get("Promotion", 0) > 0 and other.get("Expiry", 0) < 0:
            split += 1  # a Promotion (+) and an Expiry (-): two lines, never one net figure
    assert split >= 2

    # The report month's entries, one by one, walk its statement.
    month = site.report_months[account]
    assert month is not None
    (statement,) = read_records(site.out_dir / paths.statement(account, month, "csv"))
    entries = read_records(page_dir(site.out_dir, account) / f"statement-{month:%Y-%m}-entries.csv")
    assert len(entries) == int(statement["entries"])
    balance = Decimal(statement["opening"])
    for entry in entries:
        assert Decimal(entry["balance_before"]) == balance + Decimal(
            entry["hidden_movement_before"]
        )
        balance = Decimal(entry["balance_before"]) + Decimal(entry["amount"])
        assert balance == Decimal(entry["balance_after"])
    assert balance == Decimal(statement["closing"])  # the movement after the last entry is later


def page_dir(out: Path, account: str) -> Path:
    return out / paths.account_dir(account)


@pytest.mark.slow
def test_forecast_balances_findings_and_csvs_on_a_synced_company(
    company: tuple[Simulated, Settings], tmp_path: Path
) -> None:
    s, settings = company
    site = run_report(settings, None, None, str(tmp_path / "reports"))
    account = s.company
    overview = read_page(site.overviews[account])
    text = overview.visible
    as_of = date.fromisoformat(text.split("Data as of ")[1][:10])

    # The burn, net of refunds, over the stated whole days; the plan's grant; no depletion,
    # since the monthly grant is many times the burn and the balance rises every month.
    first, last = as_of - timedelta(days=28), as_of - timedelta(days=1)
    ((burned,),) = _query(settings.warehouse, BURN, [account, first, last])
    per_day = (burned / 28).quantize(Decimal("0.000001"), ROUND_HALF_EVEN)
    assert f"over the 28 whole UTC days {first} to {last}" in text
    shown_burn = f"{per_day.quantize(Decimal('0.01'), ROUND_HALF_UP):,}"
    assert f"Burn {shown_burn} credits/day, net of refunds" in text
    ((limits, status),) = _query(
        settings.warehouse,
        "SELECT limits, status FROM subscription_snapshots WHERE account = ? "
        "ORDER BY fetched_at DESC LIMIT 1",
        [account],
    )
    grant = Decimal(str(json.loads(limits)["monthlyCredits"]))
    assert status == "Active" and grant > 28 * per_day
    assert (
        f"Monthly grants {grant:,.2f} on the 1st of each month (plan Growth, status Active" in text
    )
    assert f"Runs out not before {as_of + timedelta(days=365)}" in text
    months = caption(overview, "Projected balance by month")
    assert_adds_up(overview, months, ("Opening", "Grants", "Burn"), "Closing", "forecast")

    # Both balances: the platform's latest /Consumption, the ledger's last closing.
    ((platform,),) = _query(
        settings.warehouse,
        "SELECT balance FROM consumption_snapshots WHERE account = ? AND shape_ok "
        "ORDER BY fetched_at DESC LIMIT 1",
        [account],
    )
    ((ledger,),) = _query(
        settings.warehouse,
        "SELECT closing FROM daily_balance WHERE account = ? ORDER BY day DESC LIMIT 1",
        [account],
    )
    index = read_page(site.index_html)
    (row,) = index.exact("Accounts in this report")
    assert money(row["Platform balance"]) == platform
    assert money(row["Ledger balance"]) == ledger
    assert money(row["Difference (platform - ledger)"]) == platform - ledger == 0
    truth = s.sim.truth(account)
    assert int(row["Hidden movements"]) == len(truth.hidden_movements) == 2
    assert int(row["Breakdown mismatches"]) == len(truth.breakdown_mismatches) == 1
    (shown,) = records(index.tables["Accounts in this report"])
    assert shown["Forecast"].startswith(f"not before {as_of + timedelta(days=365)} (burn ")

    # A CSV beside every table of every page, one precision on screen.
    tables = 0
    for page in site_files(site.out_dir):
        tables += assert_tables_have_their_csv(page)
        assert_one_precision(page)
    assert tables >= 30
    daily = read_records(page_dir(site.out_dir, account) / "daily-balance.csv")
    assert Decimal(daily[-1]["closing"]) == ledger
    for day in daily:
        moved = sum((Decimal(day[c]) for c in FIGURES[1:-1]), Decimal(0))
        assert Decimal(day["opening"]) + moved == Decimal(day["closing"]), day["day"]


@pytest.mark.slow
def test_a_month_without_data_is_one_clear_error(
    company: tuple[Simulated, Settings], creditlens_env: Env, tmp_path: Path
) -> None:
    # The module's synced company, copied: the report below writes, and a sync of its own only
    # repeated one (which company has no month 2020-01 is all this needs).
    s, synced = company
    copy_folder(synced.warehouse.parent, tmp_path)
    settings = creditlens_env(s)
    first, last = s.first_day, s.today
    expected = f"no statement for 2020-01: the ledger covers {first:%Y-%m}..{last:%Y-%m}"
    with pytest.raises(UsageError) as raised:
        run_report(settings, "2020-01", None, None)
    assert str(raised.value) == expected
    assert not settings.reports_dir.exists(), "nothing is written for a month with no data"
    result = cli("report", "--month", "2020-01")
    assert result.returncode == 1
    assert result.stderr == f"creditlens: error: {expected}\n"
    assert cli_in_process("report", "--month", f"{last:%Y-%m}").returncode == 0
