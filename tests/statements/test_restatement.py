"""A late entry in a closed month: the sync that re-reads it (`--since` the month's first day)
says the month was restated, the restatement is recorded once with the exact differences and
why, and `creditlens close` / `statements list` show it."""

from __future__ import annotations

import html
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from dashboards import paths
from simulator.presets import small
from simulator.scenario import TopUpSpec
from tests.conftest import Simulated, creditlens_variables, serving
from tests.pipeline.helpers import cli_in_process, table
from tests.statements.test_close import COUNTS, covered, previous_month

LATE = Decimal("123.456")


@dataclass
class Restated:
    month: date
    env: dict[str, str]
    closed: CompletedProcess
    synced: CompletedProcess
    path: Path


ONE_DAY_GRACE = {"CREDITLENS_CLOSE_AFTER_DAYS": "1"}


@pytest.fixture(scope="module")
def restated(
    synced: tuple[Simulated, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Restated]:
    s, warehouse = synced
    folder = tmp_path_factory.mktemp("restated")
    path = folder / "warehouse.duckdb"
    shutil.copytree(warehouse.parent, folder, dirs_exist_ok=True)  # with its analyst copy
    month = previous_month(covered(path))
    # One day of grace: the previous month closes whatever today is, the current one never.
    closed = cli_in_process("close", env=creditlens_variables(s, folder, **ONE_DAY_GRACE))
    # The same company, with one top-up it posted late into the closed month's 15th.
    days_ago = (s.today - month.replace(day=15)).days
    late = small().with_company("acme", top_ups=[TopUpSpec(days_ago=days_ago, amount=LATE)])
    with serving(late) as again:
        env = creditlens_variables(again, folder, **ONE_DAY_GRACE)
        synced_again = cli_in_process("sync", "--since", month.isoformat(), env=env)
        yield Restated(month, env, closed, synced_again, path)


def test_the_close_command_closes_every_covered_month(restated: Restated) -> None:
    assert restated.closed.returncode == 0, restated.closed.stderr
    # An account's first close covers its past: one line for all its months.
    (line,) = restated.closed.stdout.splitlines()
    assert line.startswith("statements closed: acme ") and f" to {restated.month:%Y-%m} (" in line


def test_the_sync_that_rereads_a_late_entry_says_the_month_was_restated(
    restated: Restated,
) -> None:
    assert restated.synced.returncode == 0, restated.synced.stderr
    ((was,),) = table(
        restated.path,
        f"SELECT closing FROM statement_closes WHERE month = '{restated.month}' AND version = 1",
    )
    line = (
        f"statement restated: acme {restated.month:%Y-%m} (version 2, closing was {was}, "
        f"now {was + LATE})"
    )
    assert line in restated.synced.stdout.splitlines()


def test_the_restatement_is_line_by_line_with_exact_differences(restated: Restated) -> None:
    found = table(
        restated.path,
        "SELECT line, was, now, difference, why FROM statement_restatements "
        f"WHERE month = '{restated.month}' AND version = 2 AND previous_version = 1",
    )
    by_line = {line: (was, now, diff, why) for line, was, now, diff, why in found}
    one_more = "late entries (1 more entry)"
    assert by_line["credits TopUp"] == (0, LATE, LATE, one_more)
    was, now, diff, why = by_line["credits"]
    assert (now - was, diff, why) == (LATE, LATE, one_more)
    was, now, diff, why = by_line["closing"]
    assert (now - was, diff, why) == (LATE, LATE, one_more)
    for total in ("agent (none)", "campaign (none)", "channel (none)"):  # a top-up has none
        assert by_line[total][2:] == (LATE, one_more)
    assert set(by_line) == {"credits", "credits TopUp", "closing", "agent (none)",
                            "campaign (none)", "channel (none)"}  # fmt: skip
    # Only that month: the months before it are as they were.
    assert table(restated.path, "SELECT DISTINCT month FROM statement_restatements") == [
        (restated.month,)
    ]


def test_a_restatement_is_recorded_once(restated: Restated) -> None:
    counts = table(restated.path, COUNTS)
    again = cli_in_process("close", env=restated.env)
    assert again.returncode == 0, again.stderr
    assert "statements: nothing to close or restate" in again.stdout
    assert table(restated.path, COUNTS) == counts
    versions = f"SELECT max(version) FROM statement_closes WHERE month = '{restated.month}'"
    assert table(restated.path, versions) == [(2,)]


def test_statements_list_shows_closes_and_restatements(restated: Restated) -> None:
    listed = cli_in_process("statements", "list", "--account", "acme", env=restated.env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    head = next(x for x in lines if x.startswith(f"acme {restated.month:%Y-%m}  version 2"))
    assert "restated 1 time(s)" in head
    ((at, was, now),) = table(
        restated.path,
        "SELECT restated_at, was, now FROM statement_restatements WHERE line = 'closing'",
    )
    assert (
        f"  closing: restated on {at:%Y-%m-%d} (was {was}, now {now}): late entries (1 more entry)"
    ) in lines
    earlier = previous_month(restated.month)
    assert any(x.startswith(f"acme {earlier:%Y-%m}  version 1") for x in lines)


def test_the_statement_page_says_what_was_restated(restated: Restated) -> None:
    month = f"{restated.month:%Y-%m}"
    built = cli_in_process("report", "--month", month, env=restated.env)
    assert built.returncode == 0, built.stderr
    page = Path(restated.env["CREDITLENS_REPORTS_DIR"]) / paths.statement("acme", restated.month)
    text = html.unescape(page.read_text())
    ((at, was, now),) = table(
        restated.path,
        "SELECT restated_at, was, now FROM statement_restatements WHERE line = 'closing'",
    )
    assert f"closing: restated on {at:%Y-%m-%d} (was {was}, now {now})" in text
    assert f"Closed on {at:%Y-%m-%d}, restated (version 2)." in text
    # In the statement's order: the summary lines, each entry type's after its line, the
    # agent, campaign and channel totals last.
    order = [text.index(f"{line}: restated on") for line in
             ("credits", "credits TopUp", "closing", "agent (none)", "channel (none)")]  # fmt: skip
    assert order == sorted(order)
