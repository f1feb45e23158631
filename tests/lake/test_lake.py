"""The warehouse as a DuckLake on a real PostgreSQL: every truth the file proves, on the lake.

An agency (a company burning down, one with hidden movements, one topped up, one whose key the
platform rejects) synced into a file and into a lake gives the same figures, the same messages
and the same one-line failure; two processes acting as two hosts sync disjoint companies into
one lake at once; a writer waits for another host's writer and names it; a writer killed inside
its transaction leaves the lake as it was, and the next sync completes it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from dagster import DagsterInstance

from benchmarks.harness.postgres import Postgres
from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from pipelines.warehouse import extensions
from pipelines.warehouse.errors import WarehouseError
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.lake import lake_for, register, stand_in
from pipelines.warehouse.lock import file_lock, holding_for
from pipelines.warehouse.writer import Warehouse
from tests import SUITE_VARIABLES
from tests.alerts.receivers import Received, receivers
from tests.alerts.test_alert_agency import AGENCY as ALERT_AGENCY
from tests.conftest import Simulated, creditlens_variables, serving
from tests.lake.conftest import figures_of_file, figures_of_lake, file_rows, lake_rows
from tests.pipeline.helpers import LEDGER_COLUMNS, cli_in_process, truth
from tests.pipeline.other_duckdb import duckdb14_python
from tests.reliability.forks import fork_server
from tests.reliability.support import assert_one_clear_error_line
from tests.statements.test_finance_agency import run_finance_agency

START = datetime.now(UTC)

# The alert tests' agency (burnco burning down, spikeco with hidden movements, topupco low),
# and a company whose key the platform never issued.
AGENCY = (
    ALERT_AGENCY
    + """
[[accounts]]
name = "ghostco"
base_url = "{url}"
api_key_env = "GHOSTCO_KEY"
"""
)


def _agency_env(
    s: Simulated, folder: Path, warehouse: str, ports: tuple[int, int]
) -> dict[str, str]:
    (folder / "agency.toml").write_text(AGENCY.format(url=s.url))
    keys = {c.name: next(k.secret for k in c.keys if k.scope == "full") for c in s.sim.companies}
    return {
        "CREDITLENS_CONFIG": str(folder / "agency.toml"),
        "CREDITLENS_WAREHOUSE": warehouse,
        "CREDITLENS_LAKE_DIR": str(folder / "lake"),
        "CREDITLENS_REPORTS_DIR": str(folder / "reports"),
        "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
        "CREDITLENS_MAX_RETRIES": "8",
        "CREDITLENS_ANOMALY_GRACE_HOURS": "0",
        **SUITE_VARIABLES,
        **{f"{name.upper()}_KEY": key for name, key in keys.items()},
        "GHOSTCO_KEY": "a-key-the-platform-never-issued",
        "CHAT_URL": f"mmost://127.0.0.1:{ports[0]}/chattoken",
        "MAIL_URL": f"mailto://127.0.0.1:{ports[1]}?from=alerts@example.com&to=ops@example.com",
    }


def _sent(received: Received) -> list[str]:
    found = []
    for _, body in received.http:
        match = re.search(r"creditlens \w+: (\S+) on (\S+?)(?:,|\r?\n)", body["text"])
        assert match, body
        found.append(f"{match[1]} on {match[2]}")
    return sorted(found)


@pytest.mark.slow
def test_an_agency_on_the_lake_tells_what_the_file_tells(
    tmp_path: Path, lake_location: str
) -> None:
    told: dict[str, tuple[str, list[str], str]] = {}
    with serving("alerts", now=START) as s, receivers() as (received, *ports):
        for backend in ("file", "lake"):
            folder = tmp_path / backend
            folder.mkdir()
            where = str(folder / "warehouse.duckdb") if backend == "file" else lake_location
            env = _agency_env(s, folder, where, (ports[0], ports[1]))
            done = cli_in_process("sync", env=env)
            assert done.returncode == 1, done.stderr[-2000:]  # ghostco's key: its one line
            failures = [line for line in done.stderr.splitlines() if "error" in line]
            assert len(failures) == 1 and "account ghostco" in failures[0], done.stderr
            breaks = cli_in_process("breaks", "list", "--all", env=env)
            assert breaks.returncode == 0, breaks.stderr
            told[backend] = (failures[0], _sent(received), breaks.stdout)
            received.clear()
        lake = figures_of_lake(lake_location)
        assert lake == figures_of_file(tmp_path / "file" / "warehouse.duckdb")
    assert told["lake"] == told["file"]
    # what the agency expects of it: spikeco's movement, burnco low, ghostco failed, closes
    assert {"failed on ghostco", "low-balance on burnco", "movements on spikeco"} <= set(
        told["lake"][1]
    )
    # burnco's and spikeco's histories always hold a closed month; topupco's 20 days do on most
    # days of a month, not on others (its first month is the current one from the 21st on)
    assert {a for a, *_ in lake["closes"]} >= {"burnco", "spikeco"}
    # Each close recorded the lake snapshot it read; the lake read at it gives the figures the
    # close froze (the month's last closing balance), whatever came after.
    closes = lake_rows(
        lake_location,
        "SELECT account, month, closing, lake_snapshot FROM statement_closes ORDER BY ALL",
    )
    assert closes and all(snapshot is not None for *_, snapshot in closes)
    for account, month, closing, snapshot in closes:
        then = lake_rows(
            lake_location,
            f"SELECT max_by(closing, day) FROM daily_balance AT (VERSION => {int(snapshot)}) "
            "WHERE account = ? AND date_trunc('month', day) = ?",
            [account, month],
        )
        assert then == [(closing,)], (account, month)
    assert file_rows(
        tmp_path / "file" / "warehouse.duckdb",
        "SELECT DISTINCT lake_snapshot FROM statement_closes",
    ) == [(None,)]
    assert lake["ledger"] and lake["hidden movements"]
    # Beside the lake, in its folder: the stand-in, the analyst copy (DuckDB 1.4 reads it), no
    # DuckDB file of the warehouse's own.
    beside = {p.name for p in (tmp_path / "lake" / "lake").iterdir()}
    assert {"warehouse.lake", "warehouse.analyst.duckdb", "data"} <= beside
    assert not any(name.endswith(".wal") for name in beside)
    copy = tmp_path / "lake" / "lake" / "warehouse.analyst.duckdb"
    in_14 = subprocess.run(
        [str(duckdb14_python()), "-c", "import duckdb, sys; print(duckdb.connect(sys.argv[1], "
         "read_only=True).execute('SELECT count(*) FROM ledger_entries').fetchone()[0])",
         str(copy)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert in_14.returncode == 0 and int(in_14.stdout) == len(lake["ledger"]), in_14.stderr


@pytest.mark.slow
def test_an_agency_on_the_lake_closes_restates_a_late_entry_and_exports_what_was_paid(
    tmp_path: Path, lake_location: str
) -> None:
    """Finance's whole run (tests/statements/test_finance_agency.py) with the lake as the
    warehouse: a rejected key, months closed and sent once as a digest adding up, a top-up
    posted late into the latest closed month restated once, FOCUS reconciling to what was paid,
    Dagster showing each close."""
    with receivers() as (received, _, smtp_port):
        run_finance_agency(tmp_path, received, smtp_port, lake_location)


def test_a_location_holding_a_password_is_one_line_that_never_repeats_it(tmp_path: Path) -> None:
    env = {
        "CREDITLENS_WAREHOUSE": "ducklake:postgres:dbname=x host=127.0.0.1 password=hunter2",
        "CREDITLENS_BASE_URL": "http://127.0.0.1:9",
        "CREDITLENS_API_KEY": "k",
        "CREDITLENS_LAKE_DIR": str(tmp_path / "lake"),
    }
    done = cli_in_process("sync", env=env)
    line = assert_one_clear_error_line(done, "CREDITLENS_WAREHOUSE", "PGPASSWORD")
    assert "hunter2" not in done.stdout + done.stderr, line


def _one_company_env(s: Simulated, folder: Path, location: str, **extra: str) -> dict[str, str]:
    """A user of ``s`` whose warehouse is ``location`` (a lake's folder: ``folder``)."""
    return creditlens_variables(
        s, folder, CREDITLENS_WAREHOUSE=location, CREDITLENS_LAKE_DIR=str(folder), **extra
    )


def test_a_writer_waits_for_another_hosts_writer_and_names_it(
    tmp_path: Path, lake_location: str
) -> None:
    """The other host's writer holds the lake (its own folder, so no file lock of this host
    says so): this sync waits its timeout, then fails in one line naming that writer."""
    with serving("small") as s:
        other = Settings.from_env(_one_company_env(s, tmp_path / "other-host", lake_location))
        mine = _one_company_env(s, tmp_path / "this-host", lake_location)
        with (
            holding_for("run-of-the-other-host", "ledger"),
            file_lock(other.warehouse, exclusive=True, timeout_s=5),
        ):
            busy = cli_in_process("sync", env={**mine, "CREDITLENS_LOCK_TIMEOUT_S": "1"})
        line = assert_one_clear_error_line(busy, "stayed locked", alone=False)
        assert "run run-of-the-other-host (ledger)" in line and f"pid {os.getpid()}" in line
        assert lake_location in line
        done = cli_in_process("sync", env=mine)  # released: the same sync goes through
        assert done.returncode == 0, done.stderr[-2000:]
        assert sorted(lake_rows(lake_location, LEDGER)) == truth(s)


LEDGER = f"SELECT {LEDGER_COLUMNS} FROM ledger_entries"  # as tests/pipeline/helpers.landed


@pytest.mark.slow
def test_two_hosts_sync_disjoint_companies_into_one_lake_at_once(
    tmp_path: Path, lake_location: str
) -> None:
    """Two processes, each with its own folder and Dagster instance, as two hosts would be,
    sync different companies of one accounts file at the same moment; both land, and a reader
    of the lake gets every company's figures as a file synced with all of them gives them."""
    with serving("alerts", now=START) as s, receivers() as (_, *ports):
        hosts = []
        for host, accounts in (("host-a", ["burnco", "topupco"]), ("host-b", ["spikeco"])):
            folder = tmp_path / host
            folder.mkdir()
            env = _agency_env(s, folder, lake_location, (ports[0], ports[1]))
            args = [arg for name in accounts for arg in ("--account", name)]
            hosts.append(
                subprocess.Popen(
                    [sys.executable, "-m", "pipelines.cli", "sync", *args],
                    env={**os.environ, **env},
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for process in hosts:
            _out, err = process.communicate(timeout=240)
            assert process.returncode == 0, err[-2000:]
        folder = tmp_path / "file"
        folder.mkdir()
        env = _agency_env(s, folder, str(folder / "warehouse.duckdb"), (ports[0], ports[1]))
        args = ["--account", "burnco", "--account", "topupco", "--account", "spikeco"]
        assert cli_in_process("sync", *args, env=env).returncode == 0
        lake, file = figures_of_lake(lake_location), figures_of_file(folder / "warehouse.duckdb")
    for name in ("ledger", "hidden movements", "days", "months", "closes"):
        assert lake[name] == file[name], name


@pytest.mark.slow
def test_a_writer_killed_inside_its_transaction_leaves_the_lake_whole(
    tmp_path: Path, lake_location: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """SIGKILL inside the landing transaction, before its COMMIT: PostgreSQL ends the session
    (and its lock), the lake holds none of the ledger, and the next sync lands all of it."""
    forks = fork_server(tmp_path_factory)
    with serving("small") as s:
        env = _one_company_env(s, tmp_path, lake_location, CREDITLENS_FAILPOINT="transaction")
        killed = forks.start("sync", env={**os.environ, **env})
        assert killed.wait(timeout=300) < 0, killed.output[-2000:]
        rows = lake_rows_or_none(lake_location)
        assert rows in (None, 0), rows
        del env["CREDITLENS_FAILPOINT"]
        done = cli_in_process("sync", env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        assert sorted(lake_rows(lake_location, LEDGER)) == truth(s)


def lake_rows_or_none(location: str) -> int | None:
    """The ledger's rows, or None where the kill came before the lake had its tables."""
    try:
        return int(lake_rows(location, "SELECT count(*) FROM ledger_entries")[0][0])
    except Exception as exc:
        if "does not exist" in str(exc) or "not exist" in str(exc):
            return None
        raise


def test_a_lake_of_an_older_schema_is_migrated_in_place(tmp_path: Path, lake_location: str) -> None:
    """A lake made by the previous release (schema 17) is upgraded by the next write, as a file
    is: migration 18 adds statement_closes.lake_snapshot there, rows kept."""
    from pipelines.warehouse.connection import migrate, open_for_write
    from pipelines.warehouse.instances import attached
    from pipelines.warehouse.schema import latest_version

    with serving("small") as s:
        settings = Settings.from_env(_one_company_env(s, tmp_path, lake_location))
    with attached(settings.warehouse, read_only=False, memory_limit="256MB") as con:
        assert migrate(con, up_to=17, lake=True) == 17
        con.execute("INSERT INTO sync_outcomes (sync_id, account, step, recorded_at, result) "
                    "VALUES ('s-1', 'acme', 'ledger', now(), 'ok')")  # fmt: skip
    with open_for_write(settings.warehouse, lock_timeout_s=5):
        pass
    versions = lake_rows(lake_location, "SELECT max(version) FROM schema_version")
    assert versions == [(latest_version(),)]
    columns = lake_rows(
        lake_location,
        "SELECT column_name FROM duckdb_columns() WHERE table_name = 'statement_closes' "
        "AND column_name = 'lake_snapshot' AND database_name = current_database()",
    )
    assert columns == [("lake_snapshot",)]
    assert lake_rows(lake_location, "SELECT sync_id FROM sync_outcomes") == [("s-1",)]


# The catalog of a lake as DuckDB lists it: tables, columns, comments, views, the history.
LAKE_CATALOG = (
    "SELECT table_name, column_name, column_index, data_type, is_nullable, comment "
    "FROM duckdb_columns() WHERE database_name = current_database()",
    "SELECT table_name, comment FROM duckdb_tables() WHERE database_name = current_database()",
    "SELECT view_name, comment, sql FROM duckdb_views() WHERE database_name = current_database() "
    "AND NOT internal",
    "SELECT version, description FROM schema_version",
)


def test_a_new_lake_gets_its_schema_in_one_commit_equal_to_a_migration_at_a_time(
    tmp_path: Path, postgres: Postgres
) -> None:
    """Each lake commit is a catalog transaction in PostgreSQL: a new lake's 18 migrations took
    1.07 s of its first open one commit each, 0.17 s in one. What it gets is what a migration at
    a time gives, and one commit: a single snapshot holds the whole schema."""
    from pipelines.warehouse.connection import apply_migration, migrate
    from pipelines.warehouse.instances import attached
    from pipelines.warehouse.schema import MIGRATIONS

    catalogs = []
    for how in ("at once", "a migration at a time"):
        name = postgres.create_database(
            f"schema_{os.getpid()}_{len(catalogs)}_{tmp_path.name[-8:]}"
        )
        folder = tmp_path / str(len(catalogs))
        folder.mkdir()
        path = stand_in(folder)
        register(path, lake_for(f"ducklake:postgres:{postgres.dsn(name)}", None, folder))
        with attached(path, read_only=False, memory_limit="256MB") as con:
            alias = con.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
            before = con.execute(f"SELECT count(*) FROM ducklake_snapshots('{alias}')").fetchone()
            if how == "at once":
                assert migrate(con, lake=True) == MIGRATIONS[-1].version
            else:
                for migration in MIGRATIONS:
                    apply_migration(con, migration, lake=True)
            after = con.execute(f"SELECT count(*) FROM ducklake_snapshots('{alias}')").fetchone()
            commits = after[0] - before[0]  # type: ignore[index]
            assert commits == (1 if how == "at once" else len(MIGRATIONS)), (how, commits)
            catalogs.append([sorted(con.execute(sql).fetchall(), key=repr) for sql in LAKE_CATALOG])
    assert len(catalogs[0][1]) > 20 and len(catalogs[0][3]) == len(MIGRATIONS)
    assert catalogs[0] == catalogs[1]


def test_a_lake_not_created_yet_is_no_warehouse_to_every_reader(
    tmp_path: Path, lake_location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its stand-in file is there from the first command that names it; the lake is not until a
    write creates it: a reader says so in one line naming the lake, as for a missing file, and
    a snapshot sync (Dagster's Launchpad ran one first) creates it, not fails."""
    with serving("small") as s:
        env = _one_company_env(s, tmp_path, lake_location)
        report = cli_in_process("report", env=env)
        line = assert_one_clear_error_line(report, "no warehouse at", lake_location)
        assert "warehouse.lake" not in line
        for name, value in env.items():  # a step reads the key from its environment, as run
            monkeypatch.setenv(name, value)
        settings = Settings.from_env(env)
        job = build_definitions(settings).resolve_job_def("snapshot_sync")
        assert job.execute_in_process(instance=DagsterInstance.ephemeral()).success
    stored = lake_rows(lake_location, "SELECT count(*) FROM consumption_snapshots")
    assert stored == [(1,)]


def test_a_lakes_yes_is_kept_and_a_dropped_catalog_is_one_line_at_the_next_open(
    tmp_path: Path, postgres: Postgres
) -> None:
    """Whether a lake holds a warehouse is asked of its catalog until the answer is yes, then
    known: a daily sync asked it 16 times, a catalog query each, and creditlens never removes
    a lake's warehouse. A catalog dropped under the process is still one line, at its next
    open."""
    name = postgres.create_database(f"kept_yes_{os.getpid()}_{tmp_path.name[-8:]}".lower())
    lake = lake_for(f"ducklake:postgres:{postgres.dsn(name)}", None, tmp_path)
    path = stand_in(tmp_path)
    register(path, lake)
    assert not warehouse_exists(path)  # no lake yet: no, and a no is asked again
    assert not warehouse_exists(path)
    with duckdb.connect() as maker:  # the least a warehouse is: its schema_version table
        extensions.load(maker)
        maker.execute(lake.attach_sql("lake", create=True))
        maker.execute("CREATE TABLE lake.schema_version (version INTEGER)")
    assert warehouse_exists(path)

    dropped = subprocess.run(
        [str(postgres.bindir / "dropdb"), "--force", "-h", postgres.host, "-p",
         str(postgres.port), "-U", postgres.user, name],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert dropped.returncode == 0, dropped.stderr
    assert warehouse_exists(path)  # known: the catalog was not asked again
    with (
        pytest.raises(WarehouseError, match="cannot open the warehouse ducklake:postgres:"),
        Warehouse(path, lock_timeout_s=60).reading(None) as con,
    ):
        con.execute("SELECT count(*) FROM schema_version").fetchall()
