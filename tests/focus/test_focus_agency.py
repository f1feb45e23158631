"""An agency's FOCUS export: two companies in one dataset, each at its own price and currency,
`--account` for one of them, hidden movements as Adjustment rows, and an idle month.

The warehouse is tests/dashboards/warehouse_factory.py's: two accounts landed and reconciled by
the sync's own code, with hidden movements planted between entries (one acknowledged), so the
rows no entry explains are known in advance.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tests.dashboards.warehouse_factory import MAIN, SECOND, built_once
from tests.focus.focus_checks import (
    check_parquet_types,
    check_reconciles_to_what_was_paid,
    check_rows,
)
from tests.pipeline.helpers import cli_in_process
from transforms.focus import HIDDEN_CATEGORY, focus_schema

ACCOUNTS = """
[defaults]
base_url = "http://127.0.0.1:9"
credit_price = "0.0125"
billing_currency = "EUR"

[[accounts]]
name = "{main}"
api_key_env = "MAIN_KEY"

[[accounts]]
name = "{second}"
api_key_env = "SECOND_KEY"
credit_price = 0.5
billing_currency = "usd"
"""
PRICES = {MAIN: (Decimal("0.0125"), "EUR"), SECOND: (Decimal("0.5"), "USD")}


@dataclass(frozen=True)
class Agency:
    warehouse: Path
    env: dict[str, str]
    folder: Path


@pytest.fixture(scope="module")
def agency(tmp_path_factory: pytest.TempPathFactory) -> Agency:
    folder = tmp_path_factory.mktemp("focus-agency")
    # The report tests' warehouse, built once per process: a copy of its folder for this one.
    shutil.copytree(built_once(tmp_path_factory).path.parent, folder, dirs_exist_ok=True)
    warehouse = folder / "warehouse.duckdb"
    config = folder / "agency.toml"
    config.write_text(ACCOUNTS.format(main=MAIN, second=SECOND.replace('"', '\\"')))
    env = {"CREDITLENS_WAREHOUSE": str(warehouse), "CREDITLENS_CONFIG": str(config)}
    return Agency(warehouse, env, folder)


def _query(warehouse: Path, sql: str, params: list[object]) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def _months_with_both(warehouse: Path) -> str:
    rows = _query(
        warehouse,
        "SELECT strftime(month, '%Y-%m') FROM monthly_statement GROUP BY month "
        "HAVING count(DISTINCT account) = 2 ORDER BY sum(hidden_movements <> 0) DESC, month",
        [],
    )
    return rows[0][0]


def _export(agency: Agency, out: Path, *flags: str) -> tuple[pl.DataFrame, str]:
    result = cli_in_process("export", "focus", *flags, "--out", str(out), env=agency.env)
    assert result.returncode == 0, result.stderr
    month = flags[flags.index("--month") + 1]
    return pl.read_parquet(out / f"focus-{month}.parquet"), result.stdout


def test_two_accounts_in_one_file_each_at_its_own_price(agency: Agency, tmp_path: Path) -> None:
    month = _months_with_both(agency.warehouse)
    dataset, said = _export(agency, tmp_path, "--month", month)
    assert f"({dataset.height} rows, FOCUS 1.2, 2 accounts)" in said
    check_parquet_types(dataset)
    start = pl.Series([f"{month}-01T00:00:00Z"]).str.to_datetime(time_zone="UTC")[0]
    check_rows(dataset.to_dicts(), start)
    assert set(dataset["SubAccountId"]) == {MAIN, SECOND}
    for account, (price, currency) in PRICES.items():
        rows = dataset.filter(pl.col("SubAccountId") == account)
        assert set(rows["BillingCurrency"]) == {currency}
        assert set(rows["SubAccountName"]) == {account}
        usage = rows.filter(pl.col("ChargeCategory") == "Usage")
        assert set(usage["ListUnitPrice"]) == {price}
        check_reconciles_to_what_was_paid(dataset, agency.warehouse, account, month, price)


def test_hidden_movements_are_adjustment_rows_tied_to_the_findings(
    agency: Agency, tmp_path: Path
) -> None:
    month = _months_with_both(agency.warehouse)
    dataset, _ = _export(agency, tmp_path, "--month", month)
    hidden = dataset.filter(pl.col("x_HiddenMovement"))
    findings = _query(
        agency.warehouse,
        "SELECT account, break_id, gap FROM hidden_movements "
        "WHERE strftime(observed_on, '%Y-%m') = ?",
        [month],
    )
    assert findings, "the fixture plants a hidden movement in this month"
    assert len(hidden) == len(findings)
    assert set(hidden["ChargeCategory"]) == {HIDDEN_CATEGORY}
    assert hidden["x_EntryType"].null_count() == hidden.height
    again, _ = _export(agency, tmp_path / "again", "--month", month)
    assert sorted(again.filter(pl.col("x_HiddenMovement"))["x_EntryId"]) == sorted(
        hidden["x_EntryId"]
    )  # the same ids in every export of the month
    for account, _, gap in findings:
        (row,) = hidden.filter(
            (pl.col("SubAccountId") == account) & (pl.col("PricingCurrencyEffectiveCost") == -gap)
        ).to_dicts()
        assert row["x_EntryId"].startswith("hm-")
        assert (row["BilledCost"], row["EffectiveCost"]) == (0, -gap * PRICES[account][0])
        assert row["ChargeDescription"].startswith("Hidden movement (no ledger entry)")


def test_account_selects_one_company(agency: Agency, tmp_path: Path) -> None:
    month = _months_with_both(agency.warehouse)
    dataset, said = _export(agency, tmp_path, "--month", month, "--account", SECOND)
    assert set(dataset["SubAccountId"]) == {SECOND} and "1 account)" in said
    whole, _ = _export(agency, tmp_path / "all", "--month", month)
    assert dataset.height == whole.filter(pl.col("SubAccountId") == SECOND).height


def test_an_idle_month_is_said_and_written_empty_with_every_column(
    agency: Agency, tmp_path: Path
) -> None:
    dataset, said = _export(agency, tmp_path, "--month", "2019-02", "--format", "parquet")
    assert dataset.height == 0 and dataset.schema == pl.Schema(
        {**focus_schema(dataset.schema["BilledCost"].scale)}  # type: ignore[attr-defined]
    )
    first, last = said.splitlines()
    assert first.startswith("note: no entries and no hidden movements in 2019-02 for ")
    assert last.startswith(f"focus: {tmp_path / 'focus-2019-02.parquet'} (0 rows")
    csv_text = cli_in_process(
        "export", "focus", "--month", "2019-02", "--format", "csv", "--out", str(tmp_path),
        env=agency.env,
    )  # fmt: skip
    assert csv_text.returncode == 0
    header = (tmp_path / "focus-2019-02.csv").read_text().splitlines()
    assert header == [",".join(dataset.columns)]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no leftovers


def test_a_write_that_fails_leaves_the_previous_file_whole_and_nothing_half_written(
    agency: Agency, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    month = _months_with_both(agency.warehouse)
    before, _ = _export(agency, tmp_path, "--month", month)
    previous = (tmp_path / f"focus-{month}.parquet").read_bytes()

    def dies_halfway(self: pl.DataFrame, file: Path, **kwargs: object) -> None:
        Path(file).write_bytes(previous[: len(previous) // 2])  # the disk fills up here
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", dies_halfway)
    result = cli_in_process(
        "export", "focus", "--month", month, "--out", str(tmp_path), env=agency.env
    )
    assert result.returncode == 1 and "No space left on device" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert (tmp_path / f"focus-{month}.parquet").read_bytes() == previous
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"focus-{month}.metadata.json",
        f"focus-{month}.parquet",
    ]
    assert before.height > 0


def test_an_account_that_never_synced_is_refused_not_exported_as_idle(
    agency: Agency, tmp_path: Path
) -> None:
    month = _months_with_both(agency.warehouse)
    config = tmp_path / "agency.toml"
    config.write_text(
        Path(agency.env["CREDITLENS_CONFIG"]).read_text()
        + '\n[[accounts]]\nname = "topupco"\napi_key_env = "TOPUPCO_KEY"\n'
    )
    env = {**agency.env, "CREDITLENS_CONFIG": str(config)}
    refused = cli_in_process("export", "focus", "--month", month, "--out", str(tmp_path), env=env)
    assert refused.returncode == 1 and not list(tmp_path.glob("focus-*"))
    (line,) = refused.stderr.strip().splitlines()
    assert "topupco: it never synced" in line and "--skip-missing" in line
    kept = cli_in_process(
        "export", "focus", "--month", month, "--out", str(tmp_path), "--skip-missing", env=env
    )
    assert kept.returncode == 0, kept.stderr
    assert "left out of the FOCUS export: topupco: it never synced" in kept.stderr
    assert "2 accounts)" in kept.stdout
    dataset = pl.read_parquet(tmp_path / f"focus-{month}.parquet")
    assert set(dataset["SubAccountId"]) == {MAIN, SECOND}
    assert set(dataset["BillingAccountId"]) == {f"127.0.0.1/{MAIN}", f"127.0.0.1/{SECOND}"}
