"""A sync whose DuckDB spills to disk lands everything, and leaves no spill folder behind.

DuckDB refuses to change an instance's spill folder once it has spilled ("Cannot switch temporary
directory after the current one has been used"). The warm instances of
pipelines/warehouse/instances.py used to set it on every open, so a large sync that spilled while
landing then failed to open the analyst copy, and nothing landed. These tests make DuckDB spill for
real, with a small CREDITLENS_DUCKDB_MEMORY_LIMIT at test size, and then open other files in the
same process.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.warehouse.connection import open_for_write, transaction
from pipelines.warehouse.instances import SPILL_PREFIX, spilled_instances
from pipelines.warehouse.read import open_read_only
from simulator.scenario import CompanySpec, Scenario
from tests.conftest import Simulated, creditlens_variables
from tests.pipeline.helpers import cli_in_process, landed, table, truth
from tests.reliability.support import assert_one_clear_error_line

Start = Callable[..., Simulated]

# Small enough that DuckDB spills at test size, large enough that no step runs out of memory.
# DuckDB 1.5.5's CHECKPOINT needs more than 24MB where 2.0's did not (the next test).
SPILLING_LIMIT = "32MB"
MERGE_FAILS_AT = "24MB"
# A year of 100 entries a day: the first sync's landing and its publish both spill at that limit.
SPILLING = Scenario(
    name="spilling",
    companies=[CompanySpec(name="bigco", history_days=365, entries_per_day=100, agents=4)],
)


def _spill_folders(*folders: Path) -> list[Path]:
    return [p for folder in folders for p in folder.glob(f"{SPILL_PREFIX}*")]


def test_an_instance_that_spilled_opens_other_files_and_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREDITLENS_DUCKDB_MEMORY_LIMIT", SPILLING_LIMIT)
    other_folder = tmp_path / "elsewhere"
    other_folder.mkdir()
    warehouse, copy, elsewhere = (
        tmp_path / "warehouse.duckdb",
        tmp_path / "warehouse.analyst.duckdb",
        other_folder / "other.duckdb",
    )
    before = spilled_instances()
    with open_for_write(warehouse, lock_timeout_s=5) as con, transaction(con):
        con.execute("CREATE TABLE t AS SELECT range AS n, hash(range) AS h FROM range(2000000)")
        con.execute("CREATE TABLE sorted AS SELECT n FROM t ORDER BY h")  # past the limit
    assert spilled_instances() > before, "the sort did not spill: the test proves nothing"
    for path in (copy, elsewhere, warehouse):  # every open after the spill works
        with open_for_write(path, lock_timeout_s=5) as con, transaction(con):
            con.execute("CREATE TABLE IF NOT EXISTS probe AS SELECT 1 AS n")
    with open_read_only(warehouse, lock_timeout_s=5) as con:
        assert con.execute("SELECT count(*) FROM sorted").fetchone() == (2000000,)
    assert _spill_folders(tmp_path, other_folder) == []


@pytest.mark.slow
def test_a_sync_that_spills_lands_the_ledger_then_a_daily_sync_and_a_publish(
    simulated: Start, tmp_path: Path
) -> None:
    s = simulated(SPILLING)
    env = creditlens_variables(s, tmp_path, CREDITLENS_DUCKDB_MEMORY_LIMIT=SPILLING_LIMIT)
    warehouse = tmp_path / "warehouse.duckdb"
    before = spilled_instances()
    first = cli_in_process("sync", env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    assert spilled_instances() > before, "the first sync did not spill: the test proves nothing"
    daily = cli_in_process("sync", env=env)  # the same process: its instances are warm
    assert daily.returncode == 0, daily.stderr[-2000:]
    expected = truth(s)
    assert landed(warehouse) == expected
    copy = tmp_path / "warehouse.analyst.duckdb"
    assert table(copy, "SELECT count(*) FROM ledger_entries") == [(len(expected),)]
    report = cli_in_process("report", env=env)
    assert report.returncode == 0, report.stderr[-2000:]
    assert _spill_folders(tmp_path) == []


@pytest.mark.slow
def test_a_merge_past_the_cap_is_one_line_and_a_rerun_with_room_completes_it(
    simulated: Start, tmp_path: Path
) -> None:
    """DuckDB 1.5's CHECKPOINT needs more than the cap that its queries spilled within: the
    daily sync's commit is in the log, the merge fails, and DuckDB's own error said only that
    "the database has been invalidated". It is one line saying what holds and what to do, and
    the next sync with room merges the log and lands the whole ledger."""
    s = simulated(SPILLING)
    env = creditlens_variables(s, tmp_path, CREDITLENS_DUCKDB_MEMORY_LIMIT=MERGE_FAILS_AT)
    assert cli_in_process("sync", env=env).returncode == 0
    failed = cli_in_process("sync", env=env)
    if failed.returncode == 0:
        pytest.skip(f"this DuckDB merges within {MERGE_FAILS_AT}: nothing to prove")
    line = assert_one_clear_error_line(failed, "CREDITLENS_DUCKDB_MEMORY_LIMIT", MERGE_FAILS_AT)
    assert "is committed to warehouse.duckdb.wal" in line and "run the command again" in line
    roomy = {**env, "CREDITLENS_DUCKDB_MEMORY_LIMIT": SPILLING_LIMIT}
    assert cli_in_process("sync", env=roomy).returncode == 0
    assert landed(tmp_path / "warehouse.duckdb") == truth(s)


def test_a_memory_limit_too_small_is_one_line_naming_the_variable(
    simulated: Start, tmp_path: Path
) -> None:
    s = simulated()
    env = creditlens_variables(s, tmp_path, CREDITLENS_DUCKDB_MEMORY_LIMIT="2MB")
    result = cli_in_process("sync", env=env)
    line = assert_one_clear_error_line(result, "CREDITLENS_DUCKDB_MEMORY_LIMIT", "2MB")
    assert "nothing was changed" in line and str(tmp_path / "warehouse.duckdb") in line
    assert landed(tmp_path / "warehouse.duckdb") == []
    assert _spill_folders(tmp_path) == []


def test_running_out_under_a_lower_limit_of_its_own_names_that_limit(tmp_path: Path) -> None:
    """Work that lowers the open's limit for itself (the reconciliation sets 64MB on an open
    of 512MB) and runs out says the limit it ran out of, not the open's."""
    from pipelines.warehouse.instances import OutOfMemory, attached, limit_memory

    path = tmp_path / "warehouse.duckdb"
    with (
        pytest.raises(OutOfMemory) as raised,
        attached(path, read_only=False, memory_limit="512MB") as con,
    ):
        limit_memory(con, "16MB")
        con.execute("SELECT list(range) FROM range(20000000)").fetchall()  # cannot spill
    line = str(raised.value)
    assert "(15.2 MiB allowed)" in line and "512MB" not in line, line
    assert str(path) in line and "nothing was changed" in line
