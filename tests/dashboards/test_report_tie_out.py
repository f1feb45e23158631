"""Tables that add up, on the known fixture warehouse: on screen to the cent, exactly in the
tooltips and CSVs; a CSV beside every table; one precision per page; both balances side by
side; a forecast that states its assumptions."""

from __future__ import annotations

import itertools
import shutil
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb

from dashboards import paths
from dashboards.site import build_site
from tests.dashboards.conftest import Built, site_files
from tests.dashboards.pages import money, read_page, records
from tests.dashboards.spreadsheets import read_records
from tests.dashboards.test_report_statement import FIGURES
from tests.dashboards.tie_out import (
    ROUNDING_LINE,
    amount,
    assert_adds_up,
    assert_column_adds_up,
    assert_one_precision,
    assert_tables_have_their_csv,
    caption,
)
from tests.dashboards.warehouse_factory import MAIN, SECOND, SUMMARY_SHORT_BY

MOVEMENT_TITLES = ("Opening", "Debits", "Credits", "Refunds", "Adjustments", "Other")
STATEMENT_PARTS = (*MOVEMENT_TITLES, "Hidden movements")
MARCH = date(2026, 3, 1)
LINES = """
SELECT category, entry_type, count(*), sum(signed_amount) FROM ledger_enriched
WHERE account = ? AND created_at >= ? AND created_at < ? GROUP BY ALL
"""


def test_the_overviews_monthly_table_carries_every_line_and_each_row_adds_up(
    built: Built,
) -> None:
    for account in (MAIN, SECOND):
        page = built.site.out_dir / paths.overview(account)
        reader = read_page(page)
        table = caption(reader, "Every month")
        assert reader.tables[table][0] == [
            "Month", *STATEMENT_PARTS, "Rounding (screen only)", "Closing", "Entries",
        ]  # fmt: skip
        assert_adds_up(reader, table, STATEMENT_PARTS, "Closing", account)
        # Each row is the month's statement, exactly.
        for row in reader.exact(table):
            month = date.fromisoformat(f"{row['Month']}-01")
            (statement,) = read_records(built.site.out_dir / paths.statement(account, month, "csv"))
            titles = dict(zip((*STATEMENT_PARTS, "Closing"), FIGURES, strict=True))
            for title, name in titles.items():
                assert money(row[title]) == Decimal(statement[name]), (account, month, name)


def test_a_statement_by_entry_type_splits_other_and_adds_up(built: Built) -> None:
    page = built.site.out_dir / paths.statement(MAIN, MARCH)
    reader = read_page(page)
    summary = caption(reader, "Statement of March 2026")
    by_type = caption(reader, "March 2026 by entry type")
    assert_column_adds_up(reader, summary, "Amount", "summary")
    assert_column_adds_up(reader, by_type, "Amount", "by type")
    lines = [r for r in reader.exact(by_type) if r["Line"] != ROUNDING_LINE]
    other = {r["Entry type"]: money(r["Amount"]) for r in lines if r["Line"] == "Other movements"}
    assert other == {"Expiry": Decimal("-1.5"), "Promotion": Decimal("5")}  # never one net 3.5
    summary_rows = {r["Line"]: money(r["Amount"]) for r in reader.exact(summary)}
    assert summary_rows["Other movements"] == Decimal("3.5")
    for line in ("Debits (usage)", "Credits (grants, top-ups)", "Refunds", "Adjustments"):
        assert (
            sum((money(r["Amount"]) for r in lines if r["Line"] == line), Decimal(0))
            == (summary_rows[line])
        )
    entries = sum(int(r["Entries"].replace(",", "")) for r in lines if r["Entries"])
    assert f"Entries in the month: {entries:,}." in reader.text
    assert "Ties out: opening + every movement = closing, exactly" in reader.text
    # Its CSV: the same rows, exact, without the rounding line; and as the ledger says.
    written = read_records(page.parent / reader.downloads[by_type])
    assert [(w["Line"], w["Entry type"]) for w in written] == [
        (r["Line"], r["Entry type"]) for r in lines
    ]
    con = duckdb.connect(str(built.fixture.path), read_only=True)
    try:
        truth = con.execute(LINES, [MAIN, "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"])
        expected = {(t, int(n), a) for _, t, n, a in truth.fetchall()}
    finally:
        con.close()
    typed = {(w["Entry type"], int(w["Entries"]), Decimal(w["Amount"])) for w in written[1:-2]}
    assert typed == expected


def test_the_report_months_entries_walk_the_balance(built: Built) -> None:
    """March is the report month: its entries one by one, each balance before the previous
    balance after plus any hidden movement, adding up to the statement."""
    out = built.site.out_dir
    (statement,) = read_records(out / paths.statement(MAIN, MARCH, "csv"))
    name = f"statement-{MARCH:%Y-%m}-entries.csv"
    entries = read_records(out / paths.account_dir(MAIN) / name)
    assert len(entries) == int(statement["entries"])
    previous = Decimal(statement["opening"])
    hidden = Decimal(0)
    for entry in entries:
        before, after = Decimal(entry["balance_before"]), Decimal(entry["balance_after"])
        gap = Decimal(entry["hidden_movement_before"])
        assert before == previous + gap
        assert before + Decimal(entry["amount"]) == after
        hidden += gap
        previous = after
    assert previous == Decimal(statement["closing"])
    assert hidden == Decimal(statement["hidden_movements"]) == Decimal("-30")
    assert entries[0]["created_at_utc"].startswith("2026-03-01T00:00:00")
    # Only the report month's entries are written; another month's page says how to get them.
    assert not (out / paths.account_dir(MAIN) / "statement-2026-02-entries.csv").exists()
    february = read_page(out / paths.statement(MAIN, date(2026, 2, 1))).text
    assert "creditlens report --month 2026-02" in february


def test_every_table_has_its_csv_and_every_page_one_precision(built: Built) -> None:
    tables = 0
    for page in site_files(built.site.out_dir):
        tables += assert_tables_have_their_csv(page)
        assert_one_precision(page)
        assert "Amounts in credits, rounded to 0.01 on screen" in read_page(page).text
    assert tables > 40
    for csv_file in built.site.downloads:
        raw = csv_file.read_bytes()
        assert raw.startswith(b"\xef\xbb\xbf") and raw.endswith(b"\r\n"), csv_file


def test_the_forecast_states_its_window_grants_and_horizon(built: Built) -> None:
    reader = read_page(built.site.out_dir / paths.overview(MAIN))
    text = reader.text
    as_of = built.fixture.as_of
    first, last = as_of - timedelta(days=28), as_of - timedelta(days=1)
    assert f"over the 28 whole UTC days {first} to {last}" in text
    assert "10,000.00 on the 1st of each month (plan Growth, status Active" in text
    assert "Top-ups none assumed" in text
    # The fixture's grant is many times its burn: no depletion, "not before" the horizon.
    assert f"Runs out not before {as_of + timedelta(days=365)}" in text
    months = caption(reader, "Projected balance by month")
    assert_adds_up(reader, months, ("Opening", "Grants", "Burn"), "Closing", "forecast")
    rows = reader.exact(months)
    assert all(money(r["Grants"]) == 10_000 for r in rows[1:])
    for earlier, later in itertools.pairwise(rows):
        assert money(later["Opening"]) == money(earlier["Closing"])
    index = records(read_page(built.site.index_html).tables["Accounts in this report"])
    by_account = {r["Account"]: r for r in index}
    assert by_account[MAIN]["Forecast"].startswith(f"not before {as_of + timedelta(days=365)}")
    assert "grants none assumed" in by_account[SECOND]["Forecast"]  # no subscription snapshot


def test_the_index_shows_both_balances_and_findings_apart(built: Built) -> None:
    rows = records(read_page(built.site.index_html).tables["Accounts in this report"])
    main = next(r for r in rows if r["Account"] == MAIN)
    ledger_last = built.fixture.main.entries[-1].balance_after
    # The platform's balance is short of the last entry's: a movement after the last entry,
    # which the ledger's closing counts, so the two balances agree.
    assert amount(main["Platform balance"]) == amount(main["Ledger balance"])
    assert money(main["Ledger balance"]) == (ledger_last - SUMMARY_SHORT_BY).quantize(
        Decimal("0.01")
    )
    assert main["Difference (platform - ledger)"] == "0.00"
    assert (main["Hidden movements"], main["Open hidden movements"]) == ("3", "2")
    assert main["Breakdown mismatches"] == "1"
    second = next(r for r in rows if r["Account"] == SECOND)
    assert second["Platform balance"] == "—" and second["Difference (platform - ledger)"] == "—"
    assert second["Breakdown mismatches"] == "0"


def _copy(built: Built, tmp_path: Path) -> Path:
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(built.fixture.path, warehouse)
    return warehouse


def test_a_platform_balance_read_after_the_reconciliation_shows_its_difference(
    built: Built, tmp_path: Path
) -> None:
    warehouse = _copy(built, tmp_path)
    con = duckdb.connect(str(warehouse))
    con.execute(
        "UPDATE consumption_snapshots SET balance = balance + 7.125 WHERE account = ?", [MAIN]
    )
    con.close()
    site = build_site(warehouse, tmp_path / "site", account=MAIN, lock_timeout_s=60)
    reader = read_page(site.index_html)
    (row,) = reader.exact("Accounts in this report")
    assert money(row["Difference (platform - ledger)"]) == Decimal("7.125")
    assert money(row["Platform balance"]) - money(row["Ledger balance"]) == Decimal("7.125")
    (shown,) = records(reader.tables["Accounts in this report"])
    assert shown["Difference (platform - ledger)"] == "+7.13"  # to 0.01, the exact in its tooltip
    (written,) = read_records(site.out_dir / "accounts.csv")
    assert written["Difference (platform - ledger)"] == "7.125000"
    overview = read_page(site.out_dir / paths.overview(MAIN)).text
    assert "Difference (platform - ledger) +7.13: the /Consumption balance was read after" in (
        overview
    )


def test_a_plan_that_stopped_granting_runs_out_on_the_day_the_projection_reaches_zero(
    built: Built, tmp_path: Path
) -> None:
    """Cancelled: no grant assumed. A heavier burn (1,000 more a day in the window) empties the
    balance within the horizon, on the first day the projection is at or below zero."""
    warehouse = _copy(built, tmp_path)
    as_of = built.fixture.as_of
    first, last = as_of - timedelta(days=28), as_of - timedelta(days=1)
    con = duckdb.connect(str(warehouse))
    con.execute("UPDATE subscription_snapshots SET status = 'Cancelled' WHERE account = ?", [MAIN])
    con.execute(
        "UPDATE daily_balance SET debits = debits - 1000 WHERE account = ? AND day BETWEEN ? AND ?",
        [MAIN, first, last],
    )
    burned, days = con.execute(
        "SELECT -sum(debits + refunds), count(*) FROM daily_balance "
        "WHERE account = ? AND day BETWEEN ? AND ?",
        [MAIN, first, last],
    ).fetchone()  # type: ignore[misc]
    (balance,) = con.execute(
        "SELECT closing FROM daily_balance WHERE account = ? ORDER BY day DESC LIMIT 1", [MAIN]
    ).fetchone()  # type: ignore[misc]
    con.close()
    assert days == 28
    per_day = (burned / 28).quantize(Decimal("0.000001"))
    reach = next(n for n in range(1, 366) if balance - n * per_day <= 0)
    site = build_site(warehouse, tmp_path / "site", account=MAIN, lock_timeout_s=60)
    text = read_page(site.out_dir / paths.overview(MAIN)).text
    assert "none assumed: status Cancelled does not grant" in text
    assert f"Runs out {as_of + timedelta(days=reach)} ({reach:,} days after {as_of})" in text
    (row,) = records(read_page(site.index_html).tables["Accounts in this report"])
    assert row["Forecast"].startswith(f"about {as_of + timedelta(days=reach)} (burn ")
    assert "grants none assumed; no top-ups" in row["Forecast"]
