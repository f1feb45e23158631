"""Every account of a step lands in one transaction, and one account's failure is still its own.

The ledger of two accounts is read and staged from the real simulator, then landed by one call;
one of them is made to break the invariant fetched = landed + quarantined (its staged count is
off by one, as a bug would make it): it is left out of the commit, with nothing of it written,
and the other lands exactly. The snapshots of several accounts and kinds are stored the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipelines.api.client import PlatformClient
from pipelines.api.options import ApiSettings
from pipelines.ledger.sync import StagedLedger, land_staged, stage_ledger
from pipelines.warehouse.writer import InvariantBroken, SnapshotLanding, Warehouse
from tests.conftest import Simulated
from tests.pipeline.helpers import landed, truth

Start = Callable[..., Simulated]


def _rows(sql: str, path: Path) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _staged(s: Simulated, staging: Path, names: tuple[str, ...]) -> list[StagedLedger]:
    """Each named account's whole ledger read from ``s`` and staged, ready to land."""
    settings = ApiSettings(base_url=s.url, api_key=s.key, processes=1)
    with PlatformClient(settings) as client:
        return [
            stage_ledger(
                client, account=name, first=s.first_day, last=s.today, run_id="run-1",
                staging_root=staging,
            )
            for name in names
        ]  # fmt: skip


def test_an_account_breaking_the_invariant_is_left_out_and_the_others_land_in_one_commit(
    simulated: Start, tmp_path: Path
) -> None:
    s = simulated("small")
    warehouse = Warehouse(tmp_path / "warehouse.duckdb", lock_timeout_s=60)
    staging = tmp_path / "staging"
    staged = _staged(s, staging, ("good", "broken", "also-good"))
    staged[1].landing = replace(
        staged[1].landing, entries_fetched=staged[1].landing.entries_fetched + 1
    )
    results = land_staged(warehouse, staged)

    assert isinstance(results["broken"], InvariantBroken)
    assert "nothing was written" in str(results["broken"])
    for name in ("good", "also-good"):
        result = results[name]
        assert not isinstance(result, BaseException)
        assert result.fetched == result.landed + result.quarantined
        assert landed(warehouse.path, name) == truth(s)
    assert landed(warehouse.path, "broken") == []
    runs = _rows("SELECT account, finished_at FROM sync_runs ORDER BY account", warehouse.path)
    assert [account for account, _ in runs] == ["also-good", "good"]
    # DuckDB's now() is the transaction's start: both rows were written by the same one.
    assert runs[0][1] == runs[1][1]
    assert not [p for p in staging.iterdir() if p.is_dir()]  # every staged folder removed


def test_snapshots_of_every_account_and_kind_are_stored_in_one_commit_one_failing_alone(
    tmp_path: Path,
) -> None:
    warehouse = Warehouse(tmp_path / "warehouse.duckdb", lock_timeout_s=60)
    now = datetime.now(UTC)

    def summary(account: str, content_hash: str, rows: int = 1) -> SnapshotLanding:
        row = {"account": account, "fetched_at": now, "run_id": "run-1",
               "content_hash": content_hash, "raw_json": "{}", "shape_ok": True}  # fmt: skip
        return SnapshotLanding("consumption_snapshots", account, content_hash, [row] * rows)

    stored = warehouse.land_snapshots([summary("acme", "h1"), summary("globex", "h2", rows=0)])
    assert stored[("consumption_snapshots", "acme")] is True
    assert isinstance(stored[("consumption_snapshots", "globex")], ValueError)
    again = warehouse.land_snapshots([summary("acme", "h1"), summary("globex", "h2")])
    assert again == {
        ("consumption_snapshots", "acme"): False,
        ("consumption_snapshots", "globex"): True,
    }
    counted = _rows(
        "SELECT account, count(*) FROM consumption_snapshots GROUP BY account ORDER BY account",
        warehouse.path,
    )
    assert counted == [("acme", 1), ("globex", 1)]


def test_rows_duckdb_refuses_in_a_shared_statement_are_pinned_on_their_account(
    simulated: Start, tmp_path: Path
) -> None:
    """The accounts land in shared statements; a staged file DuckDB cannot read fails the
    statement of every account in it, so the step lands one account at a time, which names the
    account: it alone is left out, and the others land exactly."""
    s = simulated("small")
    warehouse = Warehouse(tmp_path / "warehouse.duckdb", lock_timeout_s=60)
    staged = _staged(s, tmp_path / "staging", ("good", "unreadable", "also-good"))
    garbage = tmp_path / "not-parquet.parquet"
    garbage.write_bytes(b"this is not a Parquet file")
    files = staged[1].landing.entry_files
    staged[1].landing = replace(staged[1].landing, entry_files=[[*files[0], garbage], *files[1:]])
    results = land_staged(warehouse, staged)

    assert isinstance(results["unreadable"], duckdb.Error), results["unreadable"]
    for name in ("good", "also-good"):
        assert not isinstance(results[name], BaseException), results[name]
        assert landed(warehouse.path, name) == truth(s)
    assert landed(warehouse.path, "unreadable") == []
    runs = _rows("SELECT account FROM sync_runs ORDER BY account", warehouse.path)
    assert runs == [("also-good",), ("good",)]


def test_a_snapshot_row_duckdb_refuses_leaves_out_its_account_alone(tmp_path: Path) -> None:
    """Snapshots of one kind land in one INSERT for every account; a row DuckDB cannot cast
    fails it for all, so they are stored one by one, which pins the refusal on its account."""
    warehouse = Warehouse(tmp_path / "warehouse.duckdb", lock_timeout_s=60)
    now = datetime.now(UTC)

    def summary(account: str, fetched_at: object) -> SnapshotLanding:
        row = {"account": account, "fetched_at": fetched_at, "run_id": "run-1",
               "content_hash": f"h-{account}", "raw_json": "{}", "shape_ok": True}  # fmt: skip
        return SnapshotLanding("consumption_snapshots", account, f"h-{account}", [row])

    stored = warehouse.land_snapshots(
        [summary("acme", now), summary("bad", "not a time"), summary("globex", now)]
    )
    assert stored[("consumption_snapshots", "acme")] is True
    assert stored[("consumption_snapshots", "globex")] is True
    assert isinstance(stored[("consumption_snapshots", "bad")], duckdb.Error)
    counted = _rows("SELECT account FROM consumption_snapshots ORDER BY account", warehouse.path)
    assert counted == [("acme",), ("globex",)]
