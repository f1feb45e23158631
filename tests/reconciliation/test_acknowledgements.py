"""Every hidden movement, whatever its placement, appears once in `hidden_movements` and in its
month's statement; a known one can be acknowledged, which `--fail-on-breaks` and the checks
respect, which survives reruns, and which lapses when the movement itself changes."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.config.settings import Settings
from simulator import HiddenMovementSpec, Scenario
from tests.conftest import Simulated, serving
from tests.pipeline.helpers import cli, cli_in_process, copy_folder, sync_into, table

Start = Callable[..., Simulated]
Env = Callable[..., Settings]
Synced = tuple[Simulated, Path]

OPENING = Decimal("1234.5")
# One clock for every simulator of the module: a scenario served twice (the acknowledgement
# test's changed movement) then serves the same entries, and a copy of the module's sync
# continues it.
NOW = datetime.now(UTC) - timedelta(minutes=1)


def every_placement(at_end: Decimal = Decimal("-7.25")) -> Scenario:
    """A movement before the first entry, between two, inside a tie, across a day boundary and
    after the last entry."""
    movements = [
        HiddenMovementSpec(amount=Decimal("25"), after_index=100),
        HiddenMovementSpec(amount=Decimal("-10.5"), tie_group=3),
        HiddenMovementSpec(amount=Decimal("5.125"), day_boundary_days_ago=40),
        HiddenMovementSpec(amount=at_end, at_end=True),
    ]
    return Scenario.named("small").with_company(
        "acme", hidden_movements=movements, opening_balance=OPENING
    )


def _place(movement: tuple) -> tuple[datetime, datetime]:
    """Orders movements by their sides, none before the first entry and none after the last."""
    least, most = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)
    return (movement[0] or least, movement[1] or most)


def _placement(before: datetime | None, after: datetime | None) -> str:
    if before is None:
        return "before_first"
    if after is None:
        return "after_last"
    return "within_tie" if before == after else "between_entries"


def _month(day: date) -> date:
    return day.replace(day=1)


@pytest.fixture(scope="module")
def placed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synced]:
    """One sync of ``every_placement()`` for the module, read as is or copied by a test that
    writes."""
    with serving(every_placement(), now=NOW) as s:
        folder = tmp_path_factory.mktemp("every-placement")
        _, report = sync_into(s, folder)
        assert not report.failures(), report.failures()
        yield s, folder


def test_every_placement_once_with_its_exact_gap_and_in_its_months_statement(
    placed: Synced,
) -> None:
    s, folder = placed
    warehouse = folder / "warehouse.duckdb"
    truth = s.sim.truth(s.company)
    rows = table(
        warehouse,
        "SELECT placement, break_start, break_end, gap, observed_on, acknowledged "
        "FROM hidden_movements ORDER BY observed_on, break_end NULLS LAST",
    )
    expected = sorted(
        ((m.before_created_at, m.after_created_at, m.gap) for m in truth.hidden_movements),
        key=_place,
    )
    assert sorted(((r[1], r[2], r[3]) for r in rows), key=_place) == expected
    # Each placement follows from the movement's sides (the history is drawn back from today, so
    # which entries tie, and whether entry 100 is one of them, changes with the day).
    assert [r[0] for r in rows] == [_placement(r[1], r[2]) for r in rows]
    assert {r[0] for r in rows} == {"before_first", "between_entries", "within_tie", "after_last"}
    assert not any(r[5] for r in rows)
    ids = table(warehouse, "SELECT count(DISTINCT break_id) FROM hidden_movements")
    assert ids == [(5,)]
    per_month: dict[date, Decimal] = defaultdict(Decimal)
    for row in rows:
        per_month[_month(row[4])] += row[3]
    statement = table(
        warehouse,
        "SELECT month, hidden_movements, closing FROM monthly_statement ORDER BY month",
    )
    assert {m: h for m, h, _ in statement if h} == dict(per_month)
    assert statement[-1][2] == truth.balance  # it ties out to the platform's balance
    runs = table(
        warehouse,
        "SELECT hidden_movements, hidden_gross, hidden_net, unacknowledged FROM "
        "reconciliation_runs",
    )
    gaps = [m.gap for m in truth.hidden_movements]
    assert runs == [(5, sum(map(abs, gaps)), sum(gaps), 5)]


def _env(s: Simulated, settings: Settings) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k.startswith("CREDITLENS_")}, **{
        "CREDITLENS_BASE_URL": s.url}}  # fmt: skip


@pytest.mark.slow
def test_acknowledged_breaks_stop_failing_survive_reruns_and_lapse_when_the_gap_changes(
    placed: Synced, simulated: Start, creditlens_env: Env, tmp_path: Path
) -> None:
    # A copy of the module's sync: its first sync here is a rerun, which gates as a first does.
    s, folder = placed
    copy_folder(folder, tmp_path)
    settings = creditlens_env(s)
    env = _env(s, settings)
    # The gate's exit code 3 through the command's entry point, in-process (cli_in_process: the
    # same parsing and exit codes); test_reconciliation's gate and the unknown id below run it
    # as a process of its own.
    first = cli_in_process("sync", "--fail-on-breaks", env=env)
    assert first.returncode == 3, first.stderr
    assert "unacknowledged breaks" in first.stderr
    listed = cli_in_process("breaks", "list", env=env)
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 5
    ids = [line.split()[0] for line in listed.stdout.splitlines()]
    for break_id in ids:
        acked = cli_in_process(
            "breaks", "ack", break_id, "--reason", "known: support ticket 42", env=env
        )
        assert acked.returncode == 0, acked.stderr
        assert "acknowledged" in acked.stdout
    assert cli_in_process("breaks", "list", env=env).stdout.strip() == "no open findings"
    everything = cli_in_process("breaks", "list", "--all", env=env).stdout
    assert everything.count("known: support ticket 42") == 5
    # A rerun reconciles again: the acknowledgements hold, the gate passes.
    again = cli_in_process("sync", "--fail-on-breaks", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "5 acknowledged, 0 not" in again.stdout
    by = table(settings.warehouse, "SELECT DISTINCT acknowledged_by FROM hidden_movements")
    assert len(by) == 1 and "@" in by[0][0]
    # Withdrawn, it counts again.
    after_last = [line.split()[0] for line in everything.splitlines() if " after_last " in line]
    assert cli_in_process("breaks", "unack", after_last[0], env=env).returncode == 0
    assert cli_in_process("sync", "--fail-on-breaks", env=env).returncode == 3
    assert (
        cli_in_process("breaks", "ack", after_last[0], "--reason", "again", env=env).returncode == 0
    )
    assert cli_in_process("sync", "--fail-on-breaks", env=env).returncode == 0
    # The same place with another gap is another break: the acknowledgement lapses.
    changed = simulated(every_placement(at_end=Decimal("-9")), now=NOW)
    env["CREDITLENS_BASE_URL"] = changed.url
    lapsed = cli_in_process("sync", "--fail-on-breaks", env=env)
    assert lapsed.returncode == 3, lapsed.stdout
    rows = table(
        settings.warehouse,
        "SELECT break_id, gap, acknowledged FROM hidden_movements WHERE placement = 'after_last'",
    )
    assert rows == [(after_last[0], Decimal("-9"), False)]
    assert "4 acknowledged, 1 not" in lapsed.stdout


@pytest.mark.slow
def test_ack_needs_a_known_id_and_a_reason(
    placed: Synced, creditlens_env: Env, tmp_path: Path
) -> None:
    s, folder = placed
    copy_folder(folder, tmp_path)
    settings = creditlens_env(s)
    env = _env(s, settings)
    # This file's one process of the real entry point: its exit code and first line.
    unknown = cli("breaks", "ack", "hm-000000000000", "--reason", "x", env=env)
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("creditlens: error: no finding hm-000000000000")
    [break_id] = [r[0] for r in table(settings.warehouse, "SELECT break_id FROM balance_breaks "
                                      "WHERE placement = 'within_tie'")]  # fmt: skip
    blank = cli_in_process("breaks", "ack", break_id, "--reason", " ", env=env)
    assert blank.returncode == 1 and "--reason is required" in blank.stderr
    assert cli_in_process("breaks", "unack", break_id, env=env).returncode == 1
