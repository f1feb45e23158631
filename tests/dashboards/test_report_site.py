"""The site as files: self-contained, escaped, safely named, replaced whole, sized by days."""

from __future__ import annotations

import hashlib
import re
import shutil
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from dashboards import paths
from dashboards.read import ReportError
from dashboards.site import build_site
from pipelines.audit.report import severity_counts
from pipelines.warehouse.connection import migrate
from tests.dashboards.conftest import Built, site_files
from tests.dashboards.pages import MISMATCHES, MOVEMENTS, money, read_page
from tests.dashboards.warehouse_factory import (
    ACK_BY,
    ACK_REASON,
    AUDIT_FINDINGS,
    BREAKDOWN_EXTRA,
    MAIN,
    MISREPORTED,
    SECOND,
    START_BALANCE,
    SUMMARY_SHORT_BY,
    XSS_AGENT,
    XSS_CAMPAIGN,
    audit_findings,
    empty_warehouse,
)

SAFE_PART = re.compile(r"^[a-z0-9][a-z0-9.-]*$")


def _copy(built: Built, tmp_path: Path) -> Path:
    target = tmp_path / "warehouse.duckdb"
    shutil.copyfile(built.fixture.path, target)
    return target


@pytest.mark.slow
def test_result_names_every_page_and_the_index(built: Built) -> None:
    site = built.site
    assert site.index_html == site.out_dir / "index.html" and site.index_html.is_file()
    assert set(site.pages) == set(site_files(site.out_dir))
    assert site.accounts == (SECOND, MAIN)
    assert all(p.is_file() for p in (*site.pages, *site.downloads, *site.assets))
    assert site.overviews[MAIN] == site.out_dir / paths.overview(MAIN)
    assert site.notices == ()


def test_every_link_is_relative_and_resolves_and_plotly_is_shipped_once(built: Built) -> None:
    out = built.site.out_dir
    assert [p.relative_to(out).as_posix() for p in out.rglob("plotly*.js")] == [
        "assets/plotly.min.js"
    ]
    for page in site_files(out):
        reader = read_page(page)
        assert reader.title.endswith("creditlens")
        for href in reader.links:
            assert "://" not in href and not href.startswith("//"), (page, href)
            if href.startswith("data:"):
                continue
            assert (page.parent / href.split("#")[0]).resolve().is_file(), (page, href)
        assert page.stat().st_size < 200_000, "plotly.js is never inlined"


def test_api_text_is_escaped_and_no_script_can_be_injected(built: Built) -> None:
    for page in site_files(built.site.out_dir):
        text = page.read_text(encoding="utf-8")
        assert XSS_CAMPAIGN not in text, page
        assert "<img" not in text and 'onerror="' not in text, page
        for script in read_page(page).scripts:
            assert script.get("src") or script.get("type") == "application/json", (page, script)
        for block in re.findall(
            r'<script type="application/json"[^>]*>(.*?)</script>', text, flags=re.S
        ):
            assert "<" not in block and ">" not in block, page
    campaign = read_page(built.site.out_dir / paths.dimension_page(MAIN, "campaign_id", "cmp_xss"))
    assert XSS_CAMPAIGN in campaign.title
    agents = read_page(built.site.out_dir / paths.dimension_index(MAIN, "agent_id"))
    assert any(XSS_AGENT in row for row in agents.rows)


def test_file_names_are_slugs_with_a_hash(built: Built) -> None:
    out = built.site.out_dir
    for file in out.rglob("*"):
        if file.name == ".creditlens-site":  # the marker that lets a rebuild replace the site
            continue
        for part in file.relative_to(out).parts:
            assert SAFE_PART.match(part), part
    assert paths.safe_name("a/b") != paths.safe_name("a-b")
    assert paths.safe_name("../../etc").startswith("etc-")
    assert paths.safe_name("日本").startswith("id-")


def test_account_folders_are_guessable_from_the_name_alone(built: Built) -> None:
    """What docs/reports.md tells a script: the name when it is a safe slug, else its
    slug, "--" and the first 8 hex digits of blake2b-32 of the name (UTF-8)."""
    folders = {p.name for p in (built.site.out_dir / "accounts").iterdir()}
    digest = hashlib.blake2b(SECOND.encode(), digest_size=4).hexdigest()
    assert folders == {MAIN, f"acme-beta-co--{digest}"}
    assert paths.account_folder("north-2") == "north-2"
    for name in ("Acme", "acme-", "a--b", "con", "x" * 41, "日本", "../etc"):
        folder = paths.account_folder(name)
        assert folder != name and re.fullmatch(r"[a-z0-9-]+--[0-9a-f]{8}", folder), folder
    # Never dependent on the other accounts: a name's folder is the same in any company, and a
    # slug name never takes the hashed folder of another name (a safe slug has no "--").
    assert paths.account_folder("acme-") != paths.account_folder("acme")


def test_campaign_pages_use_the_name_and_fall_back_to_the_id(built: Built) -> None:
    out = built.site.out_dir
    winter = read_page(out / paths.dimension_page(MAIN, "campaign_id", "cmp_winter"))
    assert winter.title.startswith("Campaign Winter renewals")
    unnamed = read_page(out / paths.dimension_page(MAIN, "campaign_id", "cmp/../unnamed"))
    assert unnamed.title.startswith("Campaign cmp/../unnamed")


def test_reconciliation_page_lists_every_movement_and_the_rules(built: Built) -> None:
    page = built.site.out_dir / paths.reconciliation(MAIN)
    text = page.read_text(encoding="utf-8")
    reader = read_page(page)
    movements = reader.exact(MOVEMENTS)
    assert sorted((m["Placement"], money(m["Gap"])) for m in movements) == sorted(
        [
            ("between two entries", Decimal("-12.5")),
            ("between two entries", Decimal("-30")),
            ("after the last entry, against /Consumption", -SUMMARY_SHORT_BY),
        ]
    )
    assert all(m["Break id"].startswith("hm-") for m in movements)
    (acknowledged,) = [m for m in movements if m["Acknowledged"] != "no"]
    assert money(acknowledged["Gap"]) == Decimal("-30")
    assert acknowledged["Acknowledged"] == f"yes — {ACK_REASON} ({ACK_BY}, 2026-04-16)"
    # Each finding says what to do: reopen an acknowledged one, acknowledge a known one.
    assert (
        f"{acknowledged['Break id']} (between two entries, gap -30.00): acknowledged; it lapses "
        f"if its figure changes. Reopen it with creditlens breaks unack {acknowledged['Break id']}."
    ) in reader.text
    for movement in movements:
        if movement is not acknowledged:
            ack = f"Acknowledge a known one: creditlens breaks ack {movement['Break id']} --reason"
            assert ack in reader.text
    after = next(m for m in movements if m["Placement"].startswith("after"))
    assert after["Observed on"] == "2026-04-15" and after["Entry after"].startswith("none")
    assert "3 hidden movement(s): gross 55.00 credits (the sum of |gap|), net -55.00; " in text
    assert "1 acknowledged, 2 not." in text
    # Open findings flagged, the acknowledged one marked as such, and user text escaped.
    assert '<span class="warn">no</span>' in text
    assert '<span class="ok">yes — Support moved March credits by hand &lt;ticket' in text
    assert "the warehouse view hidden_movements" in reader.text
    assert "signed: debits are negative amounts" in text
    assert "Tolerance" in text and "every difference is a break" in text
    assert "The ledger opens at zero" in text


def test_breakdown_mismatches_are_credits_of_usage_shown_apart(built: Built) -> None:
    reader = read_page(built.site.out_dir / paths.reconciliation(MAIN))
    (mismatch,) = reader.exact(MISMATCHES)
    assert mismatch["Item (agent / campaign / channel)"] == " / ".join(MISREPORTED)
    assert money(mismatch["Difference"]) == BREAKDOWN_EXTRA
    assert mismatch["Break id"].startswith("bd-") and mismatch["Acknowledged"] == "no"
    assert "Credits of usage in the current period; not balance movements." in reader.text
    # Never a movement: not in the movements' table, nor in their totals.
    assert all(not m["Break id"].startswith("bd-") for m in reader.exact(MOVEMENTS))
    assert "1 item(s) differ, by 1.50 credits of usage in all; 0 acknowledged, 1 not." in (
        reader.text
    )
    overview = read_page(built.site.out_dir / paths.overview(MAIN)).text
    assert "Hidden movements 3 (gross 55.00, net -55.00 credits; 1 acknowledged, 2 not)" in (
        overview
    )
    assert "Breakdown mismatches 1 item(s), credits of usage, not movements" in overview


def test_a_balance_before_the_first_entry_is_a_movement_and_said_so(built: Built) -> None:
    reader = read_page(built.site.out_dir / paths.reconciliation(SECOND))
    movements = reader.exact(MOVEMENTS)
    first = movements[0]
    assert first["Placement"] == "before the first entry"
    assert money(first["Gap"]) == START_BALANCE and first["Entry before"].startswith("none")
    assert [m["Placement"] for m in movements[1:]] == ["between two entries"]
    assert (
        f"The balance before the first entry, 500.00, is not explained: it is one of the hidden "
        f"movements below, {first['Break id']} (before the first entry), not acknowledged."
    ) in reader.text
    assert "No history discovery is recorded for this account" in reader.text
    assert MISMATCHES not in reader.tables and "Not checked:" in reader.text


def test_reconciliation_page_says_so_when_there_are_no_breaks(built: Built, tmp_path: Path) -> None:
    warehouse = _copy(built, tmp_path)
    con = duckdb.connect(str(warehouse))
    con.execute("DELETE FROM balance_breaks")
    con.close()
    site = build_site(warehouse, tmp_path / "site", account=SECOND, lock_timeout_s=60)
    text = (site.out_dir / paths.reconciliation(SECOND)).read_text(encoding="utf-8")
    assert "No breaks: every balance change is explained" in text


def test_key_audit_shows_the_latest_run_per_key(built: Built) -> None:
    rows = read_page(built.site.out_dir / paths.KEY_AUDIT).rows
    by_key = {r[0]: r for r in rows[1:]}
    assert by_key["billing-prod"][5] == "high" and by_key["billing-prod"][6] == "exposed"
    assert "widget <b>key</b>" in by_key


def test_key_audit_lists_every_finding_and_counts_as_the_exit_code_does(built: Built) -> None:
    page = built.site.out_dir / paths.KEY_AUDIT
    rows = read_page(page).rows
    header = rows.index(
        ["Severity", "Rule", "Key", "Fingerprint", "Last 4", "Proved", "Where", "What to do",
         "Finding", "State"]
    )  # fmt: skip
    findings = rows[header + 1 :]
    stored = audit_findings()
    assert len(findings) == len(stored.findings) == 3
    assert {(r[2], r[1].split()[0]) for r in findings} == {
        (key, rule) for key, rules in AUDIT_FINDINGS.items() for rule in rules
    }
    by_rule = {r[1].split()[0]: r for r in findings}
    unlisted = by_rule["CLA003"]
    assert unlisted[0] == "high" and unlisted[3] == "a1b2c3d4e5f60718" and unlisted[4] == "9f3e"
    assert unlisted[5].startswith("billing endpoints answered with data: consumption")
    # The file is named literally: markup not read, the escape sequence made visible.
    assert unlisted[6] == "/repo/[link=https://evil.example]x[/link]\\x1b[2J.env:7:3 (base64)"
    assert "Remove the key from the file" in unlisted[7] and unlisted[9] == "new"
    rejected = by_rule["CLA004"]
    assert rejected[5] == "rejected: every endpoint answered 401"
    assert rejected[6] == "inventory place 'web/static/widget.js' (client-side)"
    text = page.read_text(encoding="utf-8")
    assert "\x1b" not in text
    # Counted as the audit's exit code counts; the rejected key, though listed client-side,
    # is not counted as exposing billing data nor as an active public key.
    counts = severity_counts(stored)
    assert counts == {"low": 1, "medium": 0, "high": 2, "critical": 0}
    assert "3 open finding(s): 0 critical, 2 high, 0 medium, 1 low." in text
    assert "1 key(s) read billing data beyond their scope." in text
    assert "used client-side or in public" not in text
    assert "expose billing data or are used client-side" not in text


def test_key_audit_of_an_older_run_says_its_findings_were_not_recorded(
    built: Built, tmp_path: Path
) -> None:
    warehouse = _copy(built, tmp_path)
    con = duckdb.connect(str(warehouse))
    con.execute("DELETE FROM key_audit_findings")
    con.close()
    site = build_site(warehouse, tmp_path / "site", account=SECOND, lock_timeout_s=60)
    text = (site.out_dir / paths.KEY_AUDIT).read_text(encoding="utf-8")
    assert "The findings of 2 key(s) were not recorded" in text
    assert "No finding in the latest audit of any key." in text


def test_account_and_month_choose_what_the_report_is_about(built: Built, tmp_path: Path) -> None:
    site = build_site(
        built.fixture.path,
        tmp_path / "one",
        account=MAIN,
        month=date(2026, 2, 14),
        lock_timeout_s=60,
    )
    assert site.accounts == (MAIN,)
    assert site.report_months == {MAIN: date(2026, 2, 1)}
    assert not (site.out_dir / paths.account_dir(SECOND)).exists()
    with pytest.raises(ReportError, match="no data for account 'nobody'"):
        build_site(built.fixture.path, tmp_path / "two", account="nobody", lock_timeout_s=60)


def test_a_rebuild_replaces_the_site_and_a_foreign_directory_is_refused(
    built: Built, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    build_site(built.fixture.path, out, account=SECOND, lock_timeout_s=60)
    stale = out / "accounts" / "stale.html"
    stale.write_text("old")
    build_site(built.fixture.path, out, account=SECOND, lock_timeout_s=60)
    assert not stale.exists()
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(ReportError, match="not a creditlens site"):
        build_site(built.fixture.path, foreign, lock_timeout_s=60)
    assert (foreign / "thesis.tex").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "site"]


def test_an_empty_warehouse_gives_a_site_that_says_so(tmp_path: Path) -> None:
    site = build_site(empty_warehouse(tmp_path / "w.duckdb"), tmp_path / "site", lock_timeout_s=60)
    assert site.accounts == () and site.pages == (site.index_html,)
    assert "holds no account data yet" in site.index_html.read_text(encoding="utf-8")


def test_an_older_warehouse_without_reconciliation_tables_is_named(
    built: Built, tmp_path: Path
) -> None:
    path = tmp_path / "v2.duckdb"
    con = duckdb.connect(str(path))
    migrate(con, up_to=2)
    con.close()
    site = build_site(path, tmp_path / "site", lock_timeout_s=60)
    assert any("no reconciliation tables yet" in n for n in site.notices)


def test_page_size_follows_days_and_values_not_entries(built: Built, tmp_path: Path) -> None:
    """Ten times the entries on the same days, agents and campaigns: pages stay the same size."""
    warehouse = _copy(built, tmp_path)
    con = duckdb.connect(str(warehouse))
    con.execute(
        "INSERT INTO ledger_entries SELECT e.* REPLACE (entry_id || '-copy' || i AS entry_id) "
        "FROM ledger_entries e, range(1, 10) t(i)"
    )
    con.execute(
        "INSERT INTO ledger_chain SELECT c.* REPLACE (entry_id || '-copy' || i AS entry_id, "
        "chain_position + i * 1000000 AS chain_position) FROM ledger_chain c, range(1, 10) t(i)"
    )
    con.close()
    bigger = build_site(warehouse, tmp_path / "site", account=MAIN, lock_timeout_s=60)
    for page in (
        paths.dimension_page(MAIN, "agent_id", "agt_alpha"),
        paths.dimension_index(MAIN, "campaign_id"),
        paths.overview(MAIN),
    ):
        before = (built.site.out_dir / page).stat().st_size
        after = (bigger.out_dir / page).stat().st_size
        assert after < before * 1.1, page
