"""Finance's statement: it balances, and it says what an independent query of the ledger says."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb

from dashboards import paths
from dashboards.model import STATEMENT_LINES
from dashboards.money import money_text
from tests.dashboards.conftest import Built
from tests.dashboards.pages import money, read_page
from tests.dashboards.spreadsheets import read_records
from tests.dashboards.tie_out import caption
from tests.dashboards.warehouse_factory import MAIN, SECOND, START_BALANCE, SUMMARY_SHORT_BY

FIGURES = (
    "opening",
    "debits",
    "credits",
    "refunds",
    "adjustments",
    "other",
    "hidden_movements",
    "closing",
)
MOVEMENTS = FIGURES[1:-1]

# Independent of transforms/ and of the monthly_statement view: the chain itself, month by month.
# A ledger that explains its whole balance opens at zero, so the first entry's balance before it
# is a hidden movement of its month, like each gap of the chain (located at the later entry).
# (No fixture here leaves history out of a sync, which would carry that balance in instead.)
INDEPENDENT = """
WITH chain AS (
  SELECT account, chain_position, category, signed_amount, balance_before, balance_after,
         CAST(date_trunc('month', timezone('UTC', created_at)) AS DATE) AS month,
         coalesce(lag(balance_after) OVER w, 0) AS previous_after
  FROM ledger_enriched WINDOW w AS (PARTITION BY account ORDER BY chain_position)
), ranked AS (
  SELECT *, row_number() OVER (PARTITION BY account, month ORDER BY chain_position) AS first,
         row_number() OVER (PARTITION BY account, month ORDER BY chain_position DESC) AS last
  FROM chain
)
SELECT account, month,
  max(previous_after) FILTER (WHERE first = 1) AS opening,
  coalesce(sum(signed_amount) FILTER (WHERE category = 'debit'), 0) AS debits,
  coalesce(sum(signed_amount) FILTER (WHERE category = 'credit'), 0) AS credits,
  coalesce(sum(signed_amount) FILTER (WHERE category = 'refund'), 0) AS refunds,
  coalesce(sum(signed_amount) FILTER (WHERE category = 'adjustment'), 0) AS adjustments,
  coalesce(sum(signed_amount) FILTER (WHERE category = 'other'), 0) AS other,
  coalesce(sum(balance_before - previous_after), 0) AS hidden_movements,
  max(balance_after) FILTER (WHERE last = 1) AS closing
FROM ranked GROUP BY ALL ORDER BY ALL
"""
ENTRIES = """
SELECT account, CAST(date_trunc('month', entry_day) AS DATE) AS month, count(*)
FROM ledger_entries GROUP BY ALL
"""
# The platform's balance against the last entry's: a movement after the last entry, observed on
# the day the balance was read (never before the last entry's own day).
AFTER_LAST = """
WITH summary AS (
  SELECT account, balance, shape_ok, fetched_at FROM consumption_snapshots
  QUALIFY row_number() OVER (PARTITION BY account ORDER BY fetched_at DESC) = 1
), last_entry AS (
  SELECT account, balance_after, created_at FROM ledger_enriched
  QUALIFY row_number() OVER (PARTITION BY account ORDER BY chain_position DESC) = 1
)
SELECT s.account,
  CAST(date_trunc('month', greatest(timezone('UTC', s.fetched_at), timezone('UTC', e.created_at)))
       AS DATE) AS month,
  s.balance - e.balance_after AS gap
FROM summary s JOIN last_entry e USING (account)
WHERE s.shape_ok AND s.balance IS NOT NULL AND s.balance <> e.balance_after
"""


def independent_statements(warehouse: Path) -> dict[tuple[str, date], dict[str, Decimal]]:
    """Per account and month with entries or a movement: the statement figures and the entry
    count."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        rows = con.execute(INDEPENDENT).fetchall()
        counts = {(a, m): n for a, m, n in con.execute(ENTRIES).fetchall()}
        after_last = con.execute(AFTER_LAST).fetchall()
    finally:
        con.close()
    out: dict[tuple[str, date], dict[str, Decimal]] = {}
    for account, month, *figures in rows:
        out[(account, month)] = {
            **dict(zip(FIGURES, figures, strict=True)),
            "entries": Decimal(counts[(account, month)]),
        }
    for account, month, gap in after_last:
        if (account, month) not in out:  # a month with no entry, only the movement
            closing = max((m, f) for (a, m), f in out.items() if a == account)[1]["closing"]
            zero = Decimal(0)
            out[(account, month)] = {
                **{name: zero for name in FIGURES},
                "opening": closing,
                "closing": closing,
                "entries": zero,
            }
        figures = out[(account, month)]
        figures["hidden_movements"] += gap
        figures["closing"] += gap
    return out


def _csv(built: Built, account: str, month: date) -> dict[str, str]:
    rows = read_records(built.site.out_dir / paths.statement(account, month, "csv"))
    assert len(rows) == 1
    return rows[0]


def _months(built: Built, account: str) -> list[date]:
    """The months with a statement CSV (statement-YYYY-MM.csv, not its lines or entries)."""
    prefix = f"{paths.account_dir(account)}/statement-"
    found = []
    for file in built.site.downloads:
        relative = file.relative_to(built.site.out_dir).as_posix()
        named = re.fullmatch(r"(\d{4})-(\d{2})\.csv", relative.removeprefix(prefix))
        if relative.startswith(prefix) and named:
            found.append(date(int(named[1]), int(named[2]), 1))
    return sorted(found)


def test_opening_plus_movements_is_closing_and_each_opening_is_the_previous_closing(
    built: Built,
) -> None:
    for account in (MAIN, SECOND):
        months = _months(built, account)
        assert months, account
        previous_closing = None
        for month in months:
            row = _csv(built, account, month)
            figures = {name: Decimal(row[name]) for name in FIGURES}
            movements = sum((figures[m] for m in MOVEMENTS), Decimal(0))
            assert figures["opening"] + movements == figures["closing"], (account, month)
            if previous_closing is not None:
                assert figures["opening"] == previous_closing, (account, month)
            previous_closing = figures["closing"]


def test_statement_csv_and_page_equal_an_independent_query_of_the_ledger(built: Built) -> None:
    expected = independent_statements(built.fixture.path)
    seen = set()
    for account in (MAIN, SECOND):
        for month in _months(built, account):
            row = _csv(built, account, month)
            truth = expected.get((account, month))
            if truth is None:  # a month without entries carries the balance over
                assert int(row["entries"]) == 0
                assert row["opening"] == row["closing"]
                assert all(Decimal(row[m]) == 0 for m in MOVEMENTS)
                continue
            seen.add((account, month))
            for name in FIGURES:
                assert Decimal(row[name]) == truth[name], (account, month, name)
                assert row[name] == f"{truth[name]:.6f}", "CSV decimals are exact text"
            assert int(row["entries"]) == truth["entries"]
            page = read_page(built.site.out_dir / paths.statement(account, month))
            table = caption(page, "Statement of ")
            exact = {r["Line"]: r["Amount"] for r in page.exact(table)}
            shown = {cells[0]: cells[1] for cells in page.tables[table][1:]}
            for name, label in STATEMENT_LINES:
                assert money(exact[label]) == truth[name], (account, month, name)
                assert shown[label] == money_text(truth[name])  # to 0.01 on screen
    assert seen == set(expected), "every month with entries has a statement"


def test_hidden_movements_are_on_their_own_line_in_the_month_they_happened(built: Built) -> None:
    assert Decimal(_csv(built, MAIN, date(2026, 1, 1))["hidden_movements"]) == Decimal("-12.5")
    # The gap between the last February entry and the first March one belongs to March.
    assert Decimal(_csv(built, MAIN, date(2026, 2, 1))["hidden_movements"]) == 0
    assert Decimal(_csv(built, MAIN, date(2026, 3, 1))["hidden_movements"]) == Decimal("-30")
    # The summary short of the ledger: a movement after the last entry, in the month it was read.
    april = _csv(built, MAIN, date(2026, 4, 1))
    assert Decimal(april["hidden_movements"]) == -SUMMARY_SHORT_BY
    # A ledger starting from credits no entry explains opens at zero; they are a movement.
    january = _csv(built, SECOND, date(2026, 1, 1))
    assert Decimal(january["opening"]) == 0
    assert Decimal(january["hidden_movements"]) == START_BALANCE + Decimal(2)


def test_the_statement_names_the_months_movements(built: Built) -> None:
    march = (built.site.out_dir / paths.statement(MAIN, date(2026, 3, 1))).read_text("utf-8")
    assert "(between two entries, -30.00, acknowledged)" in march
    april = (built.site.out_dir / paths.statement(MAIN, date(2026, 4, 1))).read_text("utf-8")
    assert "(after the last entry, against /Consumption, -12.50, not acknowledged)" in april
    assert "No hidden movements this month." in (
        built.site.out_dir / paths.statement(MAIN, date(2026, 2, 1))
    ).read_text("utf-8")


def test_idle_month_is_carried_and_the_current_month_is_marked_partial(built: Built) -> None:
    february = _csv(built, SECOND, date(2026, 2, 1))
    january = _csv(built, SECOND, date(2026, 1, 1))
    assert february["opening"] == february["closing"] == january["closing"]
    assert february["entries"] == "0"
    assert _csv(built, MAIN, date(2026, 3, 1))["complete_month"] == "true"
    assert _csv(built, MAIN, date(2026, 4, 1))["complete_month"] == "false"


def test_overview_links_the_latest_full_month(built: Built) -> None:
    assert built.site.report_months[MAIN] == date(2026, 3, 1)
    overview = paths.overview(MAIN)
    page = read_page(built.site.out_dir / overview)
    target = paths.relative(overview, paths.statement(MAIN, date(2026, 3, 1)))
    assert target in page.links
