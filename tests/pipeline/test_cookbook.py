"""docs/analysts.md, run as written against a synced warehouse: every query on the page.

Each cookbook query's result is checked against the simulator's own figures, computed here from
its ground truth, so the page cannot drift from the schema nor the views from the truth; the
UTC-day queries give the same answer whatever the session's time zone. The page's first query
and its Python example run too, and a DuckDB 1.4 client runs every query as 2.0 does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from pipelines.warehouse import publish
from tests.conftest import Simulated
from tests.pipeline.other_duckdb import duckdb14_python
from transforms.entry_type import category_of

ROOT = Path(__file__).resolve().parents[2]
Start = Callable[..., Simulated]
Env = Callable[..., Settings]
RELATIONS = (
    "SELECT table_name FROM duckdb_tables() UNION ALL "
    "SELECT view_name FROM duckdb_views() WHERE NOT internal"
)


ANALYSTS = ROOT / "docs" / "analysts.md"


def blocks(language: str, text: str | None = None) -> list[str]:
    """The page's code blocks in ``language``, as written."""
    page = ANALYSTS.read_text(encoding="utf-8") if text is None else text
    return re.findall(rf"```{language}\n(.*?)```", page, flags=re.S)


def cookbook() -> list[str]:
    section = ANALYSTS.read_text(encoding="utf-8").split("## Cookbook", 1)[1].split("\n## ", 1)[0]
    return blocks("sql", section)


def opening_query() -> str:
    """The query the page opens the analyst copy with, before the cookbook."""
    return blocks("sql")[0]


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """The `hidden_movements` company, synced once for every query (module-scoped)."""
    from simulator import Simulator, serve

    sim = Simulator("hidden_movements", seed=0)
    company = sim.companies[0].name
    path = tmp_path_factory.mktemp("cookbook") / "warehouse.duckdb"
    mp = pytest.MonkeyPatch()
    with serve(sim) as server:
        for name in [n for n in os.environ if n.startswith("CREDITLENS_")]:
            mp.delenv(name)
        mp.setenv("CREDITLENS_BASE_URL", server.url)
        mp.setenv("CREDITLENS_API_KEY", "demo-key")
        mp.setenv("CREDITLENS_ACCOUNT", company)
        mp.setenv("CREDITLENS_WAREHOUSE", str(path))
        # Dagster's runs in an ephemeral instance: the queries read the warehouse, and a
        # persistent instance costs a second or more per sync (tests/conftest.py).
        mp.setenv("CREDITLENS_DAGSTER_INSTANCE", "ephemeral")
        mp.delenv("DAGSTER_HOME", raising=False)
        real = publish.publish_now

        def counted(*args: Any) -> publish.Published:
            PUBLISHES.append(args[1])
            return real(*args)

        mp.setattr(publish, "publish_now", counted)  # a spy: every publish still happens
        # This sync's publishes only: a worker that leaves the module and comes back to it
        # builds the fixture again.
        PUBLISHES.clear()
        run_sync(Settings.from_env(), None, None)
    mp.undo()
    return Settings(warehouse=path).open_warehouse().analyst_copy, sim.truth(company)


# The analyst copies the synced fixture's sync published, one entry per publish.
PUBLISHES: list[Path] = []


def run(path: Path, sql: str, time_zone: str = "UTC") -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        con.execute(f"SET TimeZone = '{time_zone}'")
        return con.execute(sql).fetchall()


def net_usage(entry: dict) -> Decimal:
    category = category_of(entry["type"])
    return -entry["signedAmount"] if category in ("debit", "refund") else Decimal(0)


def utc_month(moment: datetime) -> date:
    return moment.astimezone(UTC).date().replace(day=1)


def test_the_cookbook_has_its_queries() -> None:
    assert len(cookbook()) == 6


def test_every_query_on_the_page_is_one_a_test_runs() -> None:
    """The page's SQL is the opening query and the cookbook's, which the tests below run; one
    added elsewhere on the page would be run by none. Its one Python example is run too."""
    assert blocks("sql") == [opening_query(), *cookbook()]
    assert len(blocks("python")) == 1


@pytest.mark.slow
def test_the_python_example_runs_as_written(synced: tuple[Path, object]) -> None:
    """The example, pointed at the synced copy instead of the demo's, gives the statement's
    rows and a polars frame of the daily consumption."""
    path, _ = synced
    (example,) = blocks("python")
    source = example.replace("creditlens-demo/warehouse.analyst.duckdb", str(path))
    assert source != example, "the example no longer opens the demo's analyst copy"
    names: dict[str, Any] = {}
    exec(compile(source, str(ANALYSTS), "exec"), names)
    names["con"].close()
    statement = run(path, "SELECT * FROM monthly_statement ORDER BY account, month")
    assert names["rows"] == statement and statement
    assert names["frame"].height == len(run(path, "SELECT * FROM consumption_daily")) > 0


@pytest.mark.slow
def test_a_sync_publishes_the_analyst_copy_once(synced: tuple[Path, object]) -> None:
    """Discovery, the ledger, three snapshot tables, the reconciliation and the CLI's own
    outcomes all write; the copy is published once, after the last of them."""
    path, _ = synced
    published = list(PUBLISHES)
    assert published == [path]


@pytest.mark.slow
def test_consumption_per_agent_last_month(synced: tuple[Path, object]) -> None:
    path, truth = synced
    query = cookbook()[0]
    today = datetime.now(UTC).date().replace(day=1)
    last = (today - timedelta(days=1)).replace(day=1)
    expected: dict[str | None, Decimal] = defaultdict(Decimal)
    for e in truth.entries:
        if category_of(e["type"]) in ("debit", "refund") and utc_month(e["createdAt"]) == last:
            expected[e["agentId"]] += net_usage(e)
    rows = run(path, query)
    assert {agent: credits for _, agent, credits in rows} == dict(expected)
    assert all(credits > 0 for *_, credits in rows)  # usage is positive, grants are not in it
    assert run(path, query, "America/Los_Angeles") == rows


@pytest.mark.slow
def test_top_campaigns_this_year_with_names(synced: tuple[Path, object]) -> None:
    path, truth = synced
    year = datetime.now(UTC).year
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for e in truth.entries:
        if e["campaignId"] and e["createdAt"].astimezone(UTC).year == year:
            totals[e["campaignId"]] += net_usage(e)
    rows = run(path, cookbook()[1])
    assert [(c, credits) for _, c, _, credits in rows] == sorted(
        totals.items(), key=lambda item: -item[1]
    )[:10]
    assert all(name for _, _, name, _ in rows)


@pytest.mark.slow
def test_daily_balance_for_thirty_days(synced: tuple[Path, object]) -> None:
    path, truth = synced
    rows = run(path, cookbook()[2])
    closing: dict[date, Decimal] = {}
    for e in truth.entries:
        closing[e["createdAt"].astimezone(UTC).date()] = e["balanceAfter"]
    assert 20 <= len(rows) <= 30
    today = datetime.now(UTC).date()
    for _, day, _, close, _ in rows:
        # The platform's balance closes today: the movement after the last entry is in it.
        assert close == (truth.balance if day == today else closing[day]), day


@pytest.mark.slow
def test_every_hidden_movement(synced: tuple[Path, object]) -> None:
    path, truth = synced
    rows = run(path, cookbook()[3])
    assert sorted(row[4] for row in rows) == sorted(m.gap for m in truth.hidden_movements)
    assert not any(acknowledged for *_, acknowledged, _ in rows)


@pytest.mark.slow
def test_entries_per_channel_per_month(synced: tuple[Path, object]) -> None:
    path, truth = synced
    expected = Counter((utc_month(e["createdAt"]), e["channel"]) for e in truth.entries)
    rows = run(path, cookbook()[4])
    assert {(month, channel): n for _, month, channel, n in rows} == dict(expected)
    assert run(path, cookbook()[4], "Pacific/Kiritimati") == rows


@pytest.mark.slow
def test_statement_lines_add_up_to_the_statement(synced: tuple[Path, object]) -> None:
    path, _ = synced
    lines = run(path, cookbook()[5])
    per_category: dict[tuple[date, str], Decimal] = defaultdict(Decimal)
    for _, month, category, _, amount, _ in lines:
        per_category[(month, category)] += amount
    columns = {"debit": 2, "credit": 3, "refund": 4, "adjustment": 5, "other": 6}
    for row in run(
        path,
        "SELECT month, opening, debits, credits, refunds, adjustments, other FROM "
        "monthly_statement",
    ):
        for category, index in columns.items():
            assert per_category.get((row[0], category), Decimal(0)) == row[index], row
    types = {(category, entry_type) for _, _, category, entry_type, _, _ in lines}
    assert ("other", "Expiry") in types  # an Expiry is a line of its own, not lumped


# Run by DuckDB 1.4: every relation with its columns' types, then each query's rows as text
# (Decimal, date and None print alike in both versions).
CLIENT = """
import json, sys
import duckdb
path, queries = sys.argv[1], json.loads(sys.stdin.read())
con = duckdb.connect(path, read_only=True)
con.execute("SET TimeZone = 'UTC'")
names = [r[0] for r in con.execute(
    "SELECT table_name FROM duckdb_tables() UNION ALL "
    "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]
print(json.dumps({
    "version": duckdb.__version__,
    "columns": {n: [list(r[:2]) for r in con.execute(f'DESCRIBE "{n}"').fetchall()]
                for n in sorted(names)},
    "rows": [repr(con.execute(q).fetchall()) for q in queries],
}))
"""


@pytest.mark.slow
def test_a_duckdb_1_4_client_opens_the_copy_and_runs_the_cookbook(
    synced: tuple[Path, object],
) -> None:
    """The copy is what BI tools open: docs/analysts.md's queries (the opening one and the
    cookbook's) answer in DuckDB 1.4 as in 2.0, over the same names, columns and types."""
    path, _ = synced
    queries = [opening_query(), *cookbook(), "SELECT * FROM consumption_daily ORDER BY ALL"]
    result = subprocess.run(
        [str(duckdb14_python()), "-c", CLIENT, str(path)],
        input=json.dumps(queries),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout)
    assert answer["version"].startswith("1.4."), answer["version"]
    assert answer["rows"] == [repr(run(path, q)) for q in queries]
    assert all(rows != "[]" for rows in answer["rows"][:2]), answer["rows"][:2]
    with duckdb.connect(str(path), read_only=True) as con:
        expected = {
            name: [list(r[:2]) for r in con.execute(f'DESCRIBE "{name}"').fetchall()]
            for name in answer["columns"]
        }
        names = {r[0] for r in con.execute(RELATIONS).fetchall()}
    assert set(answer["columns"]) == names
    assert answer["columns"] == expected
    assert ["amount", "DECIMAL(18,6)"] in answer["columns"]["ledger_entries"]
