"""A disk that fills during a sync is one line naming it, and changes nothing.

The disk is real: a small tmpfs mounted for the test (the test runs as root, in CI as here), so
the errors are the operating system's own ENOSPC as DuckDB and polars meet it, not a raise of
ours. Where mounting is impossible the test says so and skips.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipelines.config.settings import Settings
from pipelines.warehouse.connection import WarehouseError
from pipelines.warehouse.publish import VIEWS_FILE_BYTES, analyst_parquet_dir
from pipelines.warehouse.writer import Warehouse
from tests.conftest import Simulated, creditlens_variables
from tests.pipeline.helpers import cli_in_process, landed, truth
from tests.reliability.support import (
    analyst_copy,
    assert_one_clear_error_line,
    empty_warehouse_at,
    every_table,
)

Start = Callable[..., Simulated]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 32 MB file system of its own, unmounted after the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    tried = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=32m,mode=0755", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if tried.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill (needs root): {tried.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """Takes all the free space of ``disk`` but ``leave`` bytes, with one file."""
    filler = disk / "filler"
    with open(filler, "wb") as out:
        out.write(b"\0" * max(0, os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize - leave))
    return filler


def data_tables_of(tables: dict[str, list]) -> dict[str, list]:
    """Every table but ``sync_outcomes``, the append-only record of sync attempts."""
    return {name: rows for name, rows in tables.items() if name != "sync_outcomes"}


def data_tables(path: Path) -> dict[str, list]:
    return data_tables_of(every_table(path))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_disk_full_during_a_sync_is_one_line_and_changes_nothing(
    simulated: Start, small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = simulated("small")
    for name in list(os.environ):
        if name.startswith("CREDITLENS_") or name == "DAGSTER_HOME":
            monkeypatch.delenv(name)
    for name, value in creditlens_variables(s, small_disk).items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_env()
    analyst = analyst_copy(settings)
    half = (s.first_day + timedelta(days=20)).isoformat()
    # A migrated empty warehouse on the small disk, as a first sync would create it: the claim is
    # about the syncs that meet a full disk, not this one's creation of the file (tested elsewhere).
    empty_warehouse_at(settings.warehouse)
    first = cli_in_process("sync", "--until", half)
    assert first.returncode == 0, first.stderr[-2000:]
    before = every_table(settings.warehouse), every_table(analyst)

    filler = fill(small_disk, leave=64 * 1024)
    # The staging folder fills first: no page of the rest of the ledger fits beside it.
    staging_full = cli_in_process("sync")
    # Staging elsewhere, the rest of the ledger reaches DuckDB, whose COMMIT cannot write its log.
    commit_full = cli_in_process("sync", env={"CREDITLENS_STAGING_DIR": str(tmp_path / "stage")})
    for result, where in ((staging_full, ".creditlens-staging"), (commit_full, "warehouse.duckdb")):
        line = assert_one_clear_error_line(result, str(small_disk), where)
        assert result.returncode == 1
        assert "is full (" in line and " free)" in line and "nothing was changed" in line, line
        assert "TransactionContext" not in line and "os error" not in line, line
        # The data is as it was; sync_outcomes may have gained the attempt's own record.
        assert data_tables(settings.warehouse) == data_tables_of(before[0])
        assert data_tables(analyst) == data_tables_of(before[1])
        for tables in (every_table(settings.warehouse), every_table(analyst)):
            kept = tables.get("sync_outcomes", [])
            assert all(row in kept for row in before[0].get("sync_outcomes", [])), "lost outcomes"

    filler.unlink()  # room again: the next sync lands everything, nothing lost or doubled
    again = cli_in_process("sync")
    assert again.returncode == 0, again.stderr[-2000:]
    assert landed(settings.warehouse, s.company) == truth(s)
    assert landed(analyst, s.company) == truth(s)


def test_publishing_checks_for_room_for_the_copy_before_writing_it(
    small_disk: Path, tmp_path: Path
) -> None:
    """The room a publish needs is that of the parts it rewrites (and the small views file),
    estimated from their previous files: checked before a byte is written."""
    warehouse = Warehouse(tmp_path / "w.duckdb", small_disk / "w.analyst.duckdb", lock_timeout_s=5)
    warehouse.ensure()  # the warehouse and a first analyst copy, on the small disk
    before = digest(warehouse.analyst_copy)
    folder = analyst_parquet_dir(warehouse.analyst_copy)
    files = sorted(folder.rglob("*"))
    outcome = {"sync_id": "s", "account": "acme", "step": "ledger", "result": "ok", "part": None,
               "recorded_at": datetime.now(UTC), "error": None, "run_id": None}  # fmt: skip
    warehouse.append("sync_outcomes", [outcome])
    fill(small_disk, leave=VIEWS_FILE_BYTES // 2)  # half the room the views file alone needs
    with pytest.raises(WarehouseError) as refused:
        warehouse.publish_analyst_copy()
    line = str(refused.value)
    assert "\n" not in line
    assert re.search(r"needs [\d.]+ [KM]?B free and .* has [\d.]+ [KM]?B free", line), line
    assert str(small_disk) in line and str(warehouse.analyst_copy) in line
    assert "No space left" not in line  # said before a byte was written, not found by writing
    assert [p.name for p in small_disk.iterdir() if p.name.endswith(".partial")] == []
    assert digest(warehouse.analyst_copy) == before
    assert sorted(folder.rglob("*")) == files  # no new part either
