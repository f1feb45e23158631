"""`creditlens warehouse migrate`: a warehouse moved whole, never rebuilt by a resync.

A warehouse with every table filled (an agency synced, its months closed, a finding
acknowledged, alerts recorded, a key audited) moves into a lake with every row; a file that
DuckDB 2.0 wrote is one line saying what to do, and the export that line asks for moves into a
new file with every row too.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.alerts.receivers import receivers
from tests.conftest import serving
from tests.lake.conftest import FIGURES, figures_of_file, figures_of_lake, file_rows, lake_rows
from tests.lake.test_lake import _agency_env
from tests.pipeline.helpers import cli_in_process
from tests.pipeline.other_duckdb import duckdb20_python
from tests.reliability.support import assert_one_clear_error_line

START = datetime.now(UTC)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A warehouse file with rows in every table it can have from one agency's life."""
    folder = tmp_path_factory.mktemp("filled")
    with serving("alerts", now=START) as s, receivers() as (_, *ports):
        env = _agency_env(s, folder, str(folder / "warehouse.duckdb"), (ports[0], ports[1]))
        assert cli_in_process("sync", env=env).returncode == 1  # ghostco's rejected key
        found = cli_in_process("breaks", "list", env=env).stdout.split()
        assert cli_in_process("breaks", "ack", found[0], "--reason", "known", env=env)
        audit = cli_in_process("audit", env=env)
        assert audit.returncode in (0, 1), audit.stderr
        yield folder / "warehouse.duckdb", env


def _counts(rows_of: object, tables: list[str]) -> dict[str, int]:
    return {t: rows_of(f"SELECT count(*) FROM {t}")[0][0] for t in tables}  # type: ignore[operator]


TABLES = [
    "ledger_entries", "quarantine", "sync_runs", "subscription_snapshots",
    "consumption_snapshots", "breakdown_snapshots", "campaigns", "key_audit", "balance_breaks",
    "daily_balance", "reconciliation_runs", "key_audit_findings", "ledger_history",
    "break_acknowledgements", "ledger_chain", "sync_outcomes", "alert_events",
    "alert_rule_runs", "statement_closes", "statement_close_lines", "statement_close_totals",
    "reconciliation_carry", "statement_checks", "message_outbox",
]  # fmt: skip


@pytest.mark.slow
def test_a_warehouse_moves_into_a_lake_with_every_row(
    filled: tuple[Path, dict[str, str]], lake_location: str, tmp_path: Path
) -> None:
    warehouse, env = filled
    before = _counts(lambda sql: file_rows(warehouse, sql), TABLES)
    empty = [t for t, n in before.items() if not n and t != "quarantine"]
    assert not empty, f"the fixture leaves these tables empty: {empty}"
    lake_env = {**env, "CREDITLENS_LAKE_DIR": str(tmp_path / "lake")}
    moved = cli_in_process("warehouse", "migrate", "--to", lake_location, env=lake_env)
    assert moved.returncode == 0, moved.stderr
    assert f"from {warehouse} to {lake_location}" in moved.stdout
    assert _counts(lambda sql: lake_rows(lake_location, sql), TABLES) == before
    assert figures_of_lake(lake_location) == figures_of_file(warehouse)
    again = cli_in_process("warehouse", "migrate", "--to", lake_location, env=lake_env)
    assert_one_clear_error_line(again, "holds a warehouse already")
    # The moved warehouse is the one the next commands use.
    after = {**lake_env, "CREDITLENS_WAREHOUSE": lake_location}
    listed = cli_in_process("breaks", "list", "--all", env=after)
    assert listed.stdout == cli_in_process("breaks", "list", "--all", env=env).stdout


DUCKDB20 = """
import duckdb, sys
source, newer, export = sys.argv[1:]
con = duckdb.connect(newer)  # a file of DuckDB 2.0's own storage format
con.execute(f"ATTACH '{source}' AS old (READ_ONLY)")
con.execute(f"COPY FROM DATABASE old TO {con.execute('SELECT current_database()').fetchone()[0]}")
con.execute("DETACH old")
con.execute(f"EXPORT DATABASE '{export}' (FORMAT parquet)")
"""


@pytest.mark.slow
def test_a_file_duckdb_2_wrote_is_one_line_and_its_export_moves_whole(
    filled: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    warehouse, env = filled
    newer, export = tmp_path / "newer.duckdb", tmp_path / "newer-export"
    wrote = subprocess.run(
        [str(duckdb20_python()), "-c", DUCKDB20, str(warehouse), str(newer), str(export)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert wrote.returncode == 0, wrote.stderr
    on_newer = {**env, "CREDITLENS_WAREHOUSE": str(newer)}
    refused = cli_in_process("breaks", "list", env=on_newer)
    line = assert_one_clear_error_line(refused, str(newer), "newer DuckDB", "warehouse migrate")
    assert "EXPORT DATABASE" in line and "resync" in line
    moved_to = tmp_path / "moved.duckdb"
    moved = cli_in_process(
        "warehouse", "migrate", "--from", str(export), "--to", str(moved_to), env=env
    )
    assert moved.returncode == 0, moved.stderr
    assert figures_of_file(moved_to) == figures_of_file(warehouse)
    counts = _counts(lambda sql: file_rows(moved_to, sql), TABLES)
    assert counts == _counts(lambda sql: file_rows(warehouse, sql), TABLES)
    assert set(FIGURES)  # every figure compared above
