"""Dagster's instance in PostgreSQL (dagster-postgres), as docs/lake.md sets it up for several
hosts: a `dagster.yaml` naming that storage is used as written, and a sync's runs are there for
any host's UI to show."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks.harness.postgres import Postgres
from tests.conftest import serving
from tests.lake.test_lake import _one_company_env
from tests.pipeline.helpers import cli_in_process

DAGSTER_YAML = """
storage:
  postgres:
    postgres_db:
      hostname: {host}
      port: {port}
      db_name: {db}
      username: {user}
      password: ""
      scheme: postgresql+psycopg2
concurrency:
  pools:
    default_limit: 1
    granularity: run
telemetry:
  enabled: false
"""


@pytest.mark.slow
def test_a_sync_records_its_runs_in_a_postgres_instance(
    tmp_path: Path, lake_location: str, postgres: Postgres
) -> None:
    db = postgres.create_database("dagster_history")
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        DAGSTER_YAML.format(host=postgres.host, port=postgres.port, db=db, user=postgres.user)
    )
    with serving("small") as s:
        env = _one_company_env(
            s, tmp_path / "lake", lake_location, CREDITLENS_DAGSTER_HOME=str(home)
        )
        del env["CREDITLENS_DAGSTER_INSTANCE"]  # the persistent instance, as a user's
        done = cli_in_process("sync", env=env)
        assert done.returncode == 0, done.stderr[-2000:]
    runs = subprocess.run(
        [str(postgres.bindir / "psql"), "-h", postgres.host, "-p", str(postgres.port), "-U",
         postgres.user, "-d", db, "-Atc", "SELECT status FROM runs ORDER BY create_timestamp"],
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout.split()  # fmt: skip
    assert runs and set(runs) == {"SUCCESS"}, runs
    assert not list(home.glob("**/*.db")), "a SQLite storage beside the PostgreSQL one"
