"""The lake tests' ground: one real PostgreSQL per test process
(benchmarks/harness/postgres.py), a new database in it for each test, and readers of the lake and
of a file that ask both the same questions, so every truth the file backend proves is compared,
figure by figure, on the lake.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchmarks.harness.postgres import Postgres, PostgresMissing, running_postgres
from pipelines.warehouse import extensions
from pipelines.warehouse.lake import s3_secret_sql
from tests.pipeline.helpers import table

_databases = itertools.count()

# What a user reads of a warehouse, without the moments and run ids that differ between any two
# syncs: each company's ledger, hidden movements, days, months, closes and alerts.
FIGURES = {
    "ledger": "SELECT account, entry_id, created_at, entry_type, amount, description, "
    "has_description, channel, agent_id, campaign_id, balance_after FROM ledger_entries",
    "hidden movements": "SELECT account, break_id, placement, gap, expected_balance, "
    "observed_balance FROM hidden_movements",
    "days": "SELECT account, day, opening, debits, credits, refunds, adjustments, other, "
    "hidden_movements, closing, entries FROM daily_balance",
    "months": "SELECT * FROM monthly_statement",
    "breakdown mismatches": "SELECT account, break_id, difference FROM breakdown_mismatches",
    "closes": "SELECT account, month, version, opening, debits, credits, closing, entries, "
    "content_hash FROM statement_closes",
    "alerts": "SELECT alert_id, rule, account, dimension_value, state, measured, threshold "
    "FROM alerts",
    "quarantine": "SELECT account, reason, raw_json FROM quarantine",
}


REQUIRE = "CREDITLENS_REQUIRE_POSTGRES"


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """Skipped, saying why, without PostgreSQL's binaries; a failure under
    CREDITLENS_REQUIRE_POSTGRES=1 (`.ci/run` sets it and installs Debian's `postgresql`)."""
    try:
        server = running_postgres()
        started = server.__enter__()
    except PostgresMissing as missing:
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{REQUIRE}=1 but {missing}")
        pytest.skip(str(missing))
    try:
        yield started
    finally:
        server.__exit__(None, None, None)


@pytest.fixture
def lake_location(postgres: Postgres) -> str:
    """A DuckLake location on a database of its own, as CREDITLENS_WAREHOUSE takes it."""
    name = postgres.create_database(f"lake_{os.getpid()}_{next(_databases)}")
    return f"ducklake:postgres:{postgres.dsn(name)}"


def lake_rows(
    location: str, sql: str, params: list[Any] | None = None, s3: dict[str, str] | None = None
) -> list[tuple]:
    """Rows of ``sql`` on the lake, read as an analyst would: their own DuckDB, the extension
    from its wheel, the lake attached read-only (``s3``: the AWS variables of its data)."""
    (rows,) = lake_answers(location, [sql], params, s3)
    return rows


def lake_answers(
    location: str,
    queries: list[str],
    params: list[Any] | None = None,
    s3: dict[str, str] | None = None,
) -> list[list[tuple]]:
    """``lake_rows`` of each query, over one attach: each query still reads the snapshot that is
    newest when it starts, as an analyst's session does."""
    con = duckdb.connect()
    try:
        extensions.load(con, s3=s3 is not None)
        if s3 is not None:
            con.execute(s3_secret_sql(s3) or "")
        con.execute(f"ATTACH '{location}' AS lake (READ_ONLY)")
        con.execute("USE lake")
        return [sorted(con.execute(q, params or []).fetchall(), key=repr) for q in queries]
    finally:
        con.close()


def file_rows(path: Path, sql: str) -> list[tuple]:
    """Rows of ``sql`` on a file, in the order ``lake_rows`` gives them."""
    return sorted(table(path, sql), key=repr)


def figures_of_lake(location: str) -> dict[str, list[tuple]]:
    return dict(zip(FIGURES, lake_answers(location, list(FIGURES.values())), strict=True))


def figures_of_file(path: Path) -> dict[str, list[tuple]]:
    return {name: file_rows(path, sql) for name, sql in FIGURES.items()}
