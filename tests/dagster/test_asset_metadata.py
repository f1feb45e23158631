"""Assets say who owns them, what columns their table has and how many rows it holds.

The column schema is derived from the one declaration of each table (pipelines/warehouse/
*_tables.py), so the UI cannot list a column the warehouse does not have; row counts use
Dagster's standard key, so the UI plots them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey

from pipelines.cli.runner import run_job
from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from pipelines.orchestration.metadata import COLUMN_SCHEMA, ROW_COUNT, TABLE_NAME, TABLES
from pipelines.resources.warehouse import WAREHOUSE_POOL
from tests.dagster.support import Env, Start, cli_instance, home, sync_days
from tests.pipeline.helpers import table

ROOT = Path(__file__).resolve().parents[2]
WRITERS = {
    "ledger_history",
    "ledger_entries",
    "campaigns",
    "consumption_snapshots",
    "breakdown_snapshots",
    "subscription_snapshots",
    "balance_breaks",
    "key_audit",
}


def test_every_asset_has_owners_and_each_table_its_declared_columns() -> None:
    settings = Settings.from_env({"CREDITLENS_OWNERS": "team:finance-data,ana@example.com"})
    graph = build_definitions(settings).resolve_asset_graph()
    described = 0
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.owners == ["team:finance-data", "ana@example.com"], key
        name = key.to_user_string()
        if name not in TABLES:
            assert name == "reports"  # a site, not a table
            continue
        declared = TABLES[name]
        schema = node.metadata[COLUMN_SCHEMA]
        assert node.metadata[TABLE_NAME] == name
        assert [(c.name, c.type, c.description) for c in schema.columns] == [
            (c.name, c.type, c.doc) for c in declared.columns
        ]
        assert [c.constraints.nullable for c in schema.columns] == [
            not c.not_null for c in declared.columns
        ]
        described += 1
    assert described == 12  # statement_closes: the month close, partitioned by month
    pools = {
        key.to_user_string()
        for key in graph.get_all_asset_keys()
        if graph.get(key).pools == {WAREHOUSE_POOL}
    }
    assert pools >= WRITERS and "reports" not in pools


@pytest.mark.slow
def test_materializations_carry_the_tables_row_counts(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = simulated("small")
    settings = creditlens_env(s, persistent_dagster=True)
    home(monkeypatch, tmp_path)
    dagster_instance = cli_instance()
    sync_days(settings, dagster_instance, s.first_day, 3)
    defs = build_definitions(settings)
    for job in ("snapshot_sync", "reconciliation_run"):
        run_job(defs, job, dagster_instance)
    for name in ("campaigns", "subscription_snapshots", "daily_balance", "ledger_enriched"):
        event = dagster_instance.get_latest_materialization_event(AssetKey(name))
        assert event is not None and event.asset_materialization is not None
        rows = event.asset_materialization.metadata[ROW_COUNT].value
        assert rows == table(settings.warehouse, f"SELECT count(*) FROM {name}")[0][0] > 0


@pytest.mark.slow
def test_loading_the_code_location_warns_of_nothing() -> None:
    """What `dagster dev` and every run worker import: no Dagster warning in normal use."""
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", "import pipelines.definitions"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr[-2000:]
