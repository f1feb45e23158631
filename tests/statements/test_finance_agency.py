"""Finance's month close and FOCUS, the features together, as an agency runs them.

Three companies in one accounts file (plan grants, top-ups, promotions, refunds; one with a key
the platform rejects), statements as one digest to one aiosmtpd inbox, the product's default
persistent Dagster instance. Finance receives exactly the expected messages, each adds up on its
face and ties to its attached CSV; a top-up posted late into a closed month is one restatement,
sent once; every closed month's FOCUS file reconciles to what was paid for every company exported,
and the company that never synced is refused, not exported as idle; Dagster shows each close.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from simulator.scenario import CompanySpec, Scenario, TopUpSpec
from tests.alerts.receivers import Received, receivers
from tests.conftest import serving
from tests.focus.focus_checks import check_reconciles_to_what_was_paid
from tests.pipeline.helpers import cli_in_process, table

NOW = datetime.now(UTC)
PRICE = Decimal("0.0125")


def _scenario(late: TopUpSpec | None = None) -> Scenario:
    paid = CompanySpec(
        name="paidco", history_days=100, entries_per_day=40, agents=3, campaigns=2,
        rare_types={"Promotion": "credit"}, rare_type_rate=0.02, refund_rate=0.03,
        top_ups=[TopUpSpec(days_ago=45, amount=Decimal(3000)), *([late] if late else [])],
    )  # fmt: skip
    second = CompanySpec(name="secondco", history_days=100, entries_per_day=20, agents=2)
    rejected = CompanySpec(name="rejectco", history_days=30, entries_per_day=10, agents=1)
    return Scenario(name="finance", companies=[paid, second, rejected])


AGENCY = """
[defaults]
base_url = "{url}"
credit_price = "0.0125"
billing_currency = "EUR"

[[accounts]]
name = "paidco"
api_key_env = "PAIDCO_KEY"

[[accounts]]
name = "secondco"
api_key_env = "SECONDCO_KEY"

[[accounts]]
name = "rejectco"
api_key_env = "REJECTCO_KEY"

[[channels]]
name = "finance"
url_env = "FINANCE_URL"

[statements]
digest = true
channels = ["finance"]
"""


def _adds_up(body: str) -> int:
    """Every list of figures in a message that runs from an opening to a closing balance
    (``- label: amount`` lines): the opening and the lines shown make the closing. Returns how
    many such lists the message holds."""
    checked = 0
    for group in re.split(r"\n\n(?!- )", body):
        figures = re.findall(r"^- (.+?): (-?[\d,]+(?:\.\d+)?)$", group, re.M)
        amounts = {k: Decimal(v.replace(",", "")) for k, v in figures}
        if "Opening balance" not in amounts or "Closing balance" not in amounts:
            continue
        moved = sum(v for k, v in amounts.items() if not k.endswith("balance"))
        assert amounts["Opening balance"] + moved == amounts["Closing balance"], group
        checked += 1
    return checked


@pytest.mark.slow
def test_an_agency_closes_its_months_sends_them_once_and_exports_what_was_paid(
    tmp_path: Path,
) -> None:
    with receivers() as (received, _, smtp_port):
        run_finance_agency(tmp_path, received, smtp_port)


def run_finance_agency(
    tmp_path: Path, received: Received, smtp_port: int, lake_location: str | None = None
) -> None:
    """The whole run into a file warehouse, or into the lake at ``lake_location``; what it
    checks is read through the analyst copy, which both have in the same place."""
    home = tmp_path / "dagster"
    home.mkdir()
    with serving(_scenario(), now=NOW) as s:
        keys = {
            c.name: next(k.secret for k in c.keys if k.label == "primary") for c in s.sim.companies
        }
        config = tmp_path / "agency.toml"
        config.write_text(AGENCY.format(url=s.url))
        env = {
            "CREDITLENS_CONFIG": str(config),
            "CREDITLENS_WAREHOUSE": lake_location or str(tmp_path / "warehouse.duckdb"),
            "CREDITLENS_LAKE_DIR": str(tmp_path),
            "CREDITLENS_REPORTS_DIR": str(tmp_path / "reports"),
            "DAGSTER_HOME": str(home),
            "PAIDCO_KEY": keys["paidco"],
            "SECONDCO_KEY": keys["secondco"],
            "REJECTCO_KEY": "sk_rejected_by_the_platform_00000000",
            "FINANCE_URL": f"mailto://127.0.0.1:{smtp_port}?from=cl@example.com&to=fin@example.com",
        }
        first = cli_in_process("sync", env=env)
        assert first.returncode == 1 and "account rejectco" in first.stderr
    warehouse = tmp_path / "warehouse.analyst.duckdb"  # beside the file, or in the lake's folder
    closed = table(
        warehouse, "SELECT account, strftime(month, '%Y-%m'), version FROM closed_statements"
    )
    months = sorted({m for _, m, _ in closed})
    latest = months[-1]
    assert {a for a, _, _ in closed} == {"paidco", "secondco"} and len(months) >= 3
    # One digest: the companies' latest closed month (their first close covers every month).
    (mail,) = received.emails
    (digest,) = _digests(warehouse)
    assert _adds_up(digest) == 3  # each company, and their total
    assert "**paidco (" in digest and "**secondco (" in digest and "rejectco" not in digest
    text = mail.get_body(preferencelist=("plain",)).get_content()
    assert "- Opening balance: " in text and "- Closing balance: " in text  # lines, not a blob
    files = {p.get_filename(): p.get_payload(decode=True) for p in mail.iter_attachments()}
    assert cli_in_process("report", env=env).returncode == 0
    for account in ("paidco", "secondco"):
        sent = files[f"statement-{account}-{latest}-v1.csv"]
        site = tmp_path / "reports" / "accounts" / account / f"statement-{latest}.csv"
        assert sent == site.read_bytes()  # the CSV finance files is the site's, byte for byte

    # A top-up paidco posted late into the latest closed month: one restatement, sent once.
    received.clear()
    fifteenth = date.fromisoformat(f"{latest}-15")
    late = TopUpSpec(days_ago=(NOW.date() - fifteenth).days, amount=Decimal(100))
    with serving(_scenario(late), now=NOW) as again:
        config.write_text(AGENCY.format(url=again.url))
        resynced = cli_in_process("sync", "--since", f"{latest}-01", env=env)
        assert f"statement restated: paidco {latest}" in resynced.stdout
        assert cli_in_process("close", env=env).returncode == 0  # nothing more to send
    (restatement,) = received.emails
    body = _digests(warehouse)[-1]
    assert "- Credits (grants, top-ups): was " in body and "difference 100" in body
    assert "(late entries" in body and _adds_up(body) == 2  # as it now stands, and the total
    assert restatement["Subject"].startswith("creditlens statements:")

    # FOCUS: every closed month reconciles to what was paid; rejectco is refused, not idle.
    for month in months:
        out = tmp_path / "focus" / month
        refused = cli_in_process("export", "focus", "--month", month, "--out", str(out), env=env)
        assert refused.returncode == 1 and "rejectco: its latest sync failed" in refused.stderr
        done = cli_in_process(
            "export", "focus", "--month", month, "--out", str(out), "--skip-missing", env=env
        )
        assert done.returncode == 0, done.stderr
        assert "left out of the FOCUS export: rejectco" in done.stderr
        import polars as pl

        dataset = pl.read_parquet(out / f"focus-{month}.parquet")
        for account in ("paidco", "secondco"):
            check_reconciles_to_what_was_paid(dataset, warehouse, account, month, PRICE)

    # Dagster shows each close: a materialization of every closed month's partition.
    with DagsterInstance.from_config(str(home)) as dagster_instance:
        recorded = dagster_instance.fetch_materializations(
            AssetKey("statement_closes"), limit=500
        ).records
        partitions = {r.event_log_entry.dagster_event.partition for r in recorded}
    assert set(months) <= partitions


def _digests(warehouse: Path) -> list[str]:
    """The digests' Markdown, as queued and sent, oldest first."""
    rows = table(
        warehouse,
        "SELECT body FROM message_outbox WHERE starts_with(event_id, 'statements/digest/') "
        "ORDER BY enqueued_at",
    )
    return [body for (body,) in rows]
