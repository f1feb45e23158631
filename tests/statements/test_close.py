"""Closing: a month closes once a sync covered its last day plus close_after_days, not a day
before; its figures tie out to the ledger; a rerun changes nothing; a close is whole or absent."""

from __future__ import annotations

import re
import signal
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.api.errors import ConfigurationError
from pipelines.config.settings import Settings
from pipelines.statements.close import check_closes, last_day
from tests.pipeline.helpers import cli, cli_in_process, table
from tests.statements.conftest import Copy

COUNTS = (
    "SELECT (SELECT count(*) FROM statement_closes), (SELECT count(*) FROM statement_close_lines), "
    "(SELECT count(*) FROM statement_close_totals), (SELECT count(*) FROM statement_restatements)"
)


def covered(path: Path) -> date:
    ((day,),) = table(path, "SELECT max(range_end) FROM sync_runs")
    return day


def previous_month(day: date) -> date:
    return (day.replace(day=1) - timedelta(days=1)).replace(day=1)


def test_a_month_closes_once_its_grace_period_is_covered_not_a_day_before(copy: Copy) -> None:
    _, settings = copy()
    path = settings.warehouse
    month = previous_month(covered(path))
    grace = (covered(path) - last_day(month)).days  # exactly covered: the month closes
    _, waiting = copy(CREDITLENS_CLOSE_AFTER_DAYS=str(grace + 1))
    early = check_closes(waiting.open_warehouse(), waiting)
    assert month not in {s.month for s in early.issued}
    assert early.issued and all(s.month < month for s in early.issued)  # older months close
    # Several months closed at once are one batch (only the latest sent); one alone is not.
    assert early.first_close_accounts == ({"acme"} if len(early.issued) > 1 else set())
    _, due = copy(CREDITLENS_CLOSE_AFTER_DAYS=str(grace))
    later = check_closes(due.open_warehouse(), due)
    assert [s.month for s in later.issued] == [month]
    assert later.first_close_accounts == set()  # the account's first close was the one before
    assert later.lines() == [f"statement closed: acme {month:%Y-%m}"]
    ((first,),) = table(path, f"SELECT first_close FROM statement_closes WHERE month = '{month}'")
    assert first is False


def test_closed_figures_tie_out_to_the_ledger(copy: Copy) -> None:
    _, settings = copy()
    result = check_closes(settings.open_warehouse(), settings)
    assert result.issued
    path = settings.warehouse
    for s in result.issued:
        start, end = s.month, last_day(s.month) + timedelta(days=1)
        where = (
            f"created_at >= TIMESTAMPTZ '{start} 00:00:00+00' "
            f"AND created_at < TIMESTAMPTZ '{end} 00:00:00+00'"
        )
        ((entries, total, last_balance),) = table(
            path,
            "SELECT count(*), sum(amount), arg_max(balance_after, created_at) "
            f"FROM ledger_entries WHERE {where}",
        )
        movements = sum(
            (x.amount for x in s.lines if x.entry_type is None and x.name in MOVEMENTS),
            Decimal(0),
        )
        assert movements == total  # the small scenario's ledger is signed
        assert total + s.line("hidden_movements") == s.line("closing") - s.line("opening")
        assert sum(x.entries for x in s.lines if x.entry_type is not None) == entries
        for line in MOVEMENTS:
            typed = [x.amount for x in s.lines if x.entry_type is not None and x.name == line]
            assert sum(typed, Decimal(0)) == s.line(line)
        for dimension in ("agent", "campaign", "channel"):
            totals = [t for t in s.totals if t.dimension == dimension]
            assert sum((t.amount for t in totals), Decimal(0)) == total
            assert sum(t.entries for t in totals) == entries
        if s.line("hidden_movements") == 0:
            assert s.line("closing") == last_balance


MOVEMENTS = ("debits", "credits", "refunds", "adjustments", "other")


def test_a_rerun_changes_nothing(copy: Copy) -> None:
    _, settings = copy()
    path = settings.warehouse
    first = check_closes(settings.open_warehouse(), settings)
    counts = table(path, COUNTS)
    hashes = table(path, "SELECT account, month, version, content_hash FROM statement_closes")
    again = check_closes(settings.open_warehouse(), settings)
    assert first.issued and not again.issued and not again.restated
    assert table(path, COUNTS) == counts
    assert table(path, "SELECT account, month, version, content_hash FROM statement_closes") == (
        hashes
    )
    # The same data closed again from scratch hashes the same: the hash is the figures only.
    assert {s.content_hash for s in first.issued} == {h for *_, h in hashes}


def test_a_close_that_fails_midway_leaves_no_close(
    copy: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast half of the kill test (tests/statements/test_close_kill.py): anything escaping
    the close's transaction after its inserts rolls all of them back."""
    _, settings = copy()

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr("pipelines.warehouse.statement_store.failpoint", broken)
    with pytest.raises(OSError, match="disk gone"):
        check_closes(settings.open_warehouse(), settings)
    assert table(settings.warehouse, COUNTS) == [(0, 0, 0, 0)]
    monkeypatch.undo()
    assert check_closes(settings.open_warehouse(), settings).issued


@pytest.mark.slow
def test_killed_inside_the_close_leaves_no_close_then_a_whole_one(copy: Copy) -> None:
    """SIGKILL at the failpoint inside the close's transaction (after its inserts, before its
    COMMIT): nothing of it is in the warehouse; the next close is whole."""
    env, settings = copy()
    killed = cli("close", env={**env, "CREDITLENS_FAILPOINT": "statement_close"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert table(settings.warehouse, COUNTS) == [(0, 0, 0, 0)]
    again = cli_in_process("close", env=env)
    assert again.returncode == 0, again.stderr
    closes, lines, totals, _ = table(settings.warehouse, COUNTS)[0]
    (said,) = re.findall(r"^statements closed: acme \S+ to \S+ \((\d+) months", again.stdout, re.M)
    assert closes == int(said)
    # Every close has its lines (the equation's 8 and each entry type's) and its totals.
    assert table(
        settings.warehouse,
        "SELECT count(*) FROM statement_closes c WHERE (SELECT count(*) FROM statement_close_lines "
        "l WHERE l.account = c.account AND l.month = c.month AND l.version = c.version) < 8 OR "
        "NOT EXISTS (SELECT 1 FROM statement_close_totals t WHERE t.account = c.account AND "
        "t.month = c.month AND t.version = c.version)",
    ) == [(0,)]
    assert lines >= 8 * closes and totals >= 3 * closes


ACCOUNTS = """
[defaults]
close_after_days = 5

[[accounts]]
name = "acme"
base_url = "http://127.0.0.1:1"
api_key_env = "ACME_KEY"
close_after_days = {acme}

[[accounts]]
name = "globex"
base_url = "http://127.0.0.1:1"
api_key_env = "GLOBEX_KEY"
"""


def test_close_after_days_is_read_from_the_accounts_file(tmp_path: Path) -> None:
    config = tmp_path / "creditlens.toml"
    config.write_text(ACCOUNTS.format(acme=3))
    settings = Settings.from_env({"CREDITLENS_CONFIG": str(config)}, cwd=tmp_path)
    assert {a.name: a.close_after_days for a in settings.accounts} == {"acme": 3, "globex": 5}
    assert Settings.from_env({}).account.close_after_days == 2
    config.write_text(ACCOUNTS.format(acme='"soon"'))
    with pytest.raises(ConfigurationError) as refused:
        Settings.from_env({"CREDITLENS_CONFIG": str(config)}, cwd=tmp_path)
    assert "close_after_days" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.slow
def _with_a_mail_channel(copy: Copy, tmp_path: Path) -> tuple[dict[str, str], Settings]:
    """Statements go to a mail channel whose variable is unset: queued, never sent."""
    config = tmp_path / "creditlens.toml"
    config.write_text('[[channels]]\nname = "mail"\nurl_env = "MAIL_URL"\n')
    return copy(CREDITLENS_CONFIG=str(config), CREDITLENS_STATEMENT_CHANNELS="mail")


def test_killed_after_queueing_leaves_neither_close_nor_message_then_both(
    copy: Copy, tmp_path: Path
) -> None:
    """A close and its messages commit together: killed after the messages were queued, in
    the close's transaction, nothing of either is there; the next check records and queues
    both, and never a close without its message."""
    env, settings = _with_a_mail_channel(copy, tmp_path)
    killed = cli("close", env={**env, "CREDITLENS_FAILPOINT": "statement_queued"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert table(settings.warehouse, COUNTS) == [(0, 0, 0, 0)]
    assert table(settings.warehouse, "SELECT count(*) FROM message_outbox") == [(0,)]
    again = cli_in_process("close", env=env)
    assert again.returncode == 0, again.stderr
    queued = table(settings.warehouse, "SELECT event_id FROM message_outbox")
    latest = table(
        settings.warehouse, "SELECT account, strftime(max(month), '%Y-%m') FROM statement_closes "
        "GROUP BY account",
    )  # fmt: skip
    assert queued == [(f"statement/{a}/{m}/v1",) for a, m in latest]


def test_a_close_left_without_its_message_is_queued_once(copy: Copy, tmp_path: Path) -> None:
    """An earlier version recorded closes and queued their messages in two transactions; a
    close it left without its messages is found and queued once, never twice."""
    import duckdb

    env, settings = _with_a_mail_channel(copy, tmp_path)
    assert cli_in_process("close", env=env).returncode == 0
    with duckdb.connect(str(settings.warehouse)) as con:  # as the earlier version left it
        con.execute("DELETE FROM message_outbox")
    done = cli_in_process("close", env=env)
    assert done.returncode == 0, done.stderr
    assert "statement message queued: statement/acme/" in done.stdout
    assert table(settings.warehouse, "SELECT count(*) FROM message_outbox") == [(1,)]
    assert "queued" not in cli_in_process("close", env=env).stdout  # once
    assert table(settings.warehouse, "SELECT count(*) FROM message_outbox") == [(1,)]


def test_several_months_closed_at_once_send_the_latest_whatever_closed_them(
    copy: Copy, tmp_path: Path
) -> None:
    """A month closed by hand first is sent by hand; the automatic close of the rest of the
    backlog sends only its latest month, not one message per month of history."""
    env, settings = _with_a_mail_channel(copy, tmp_path)
    months = table(
        settings.warehouse, "SELECT strftime(month, '%Y-%m') FROM monthly_statement ORDER BY 1"
    )
    oldest = months[0][0]
    by_hand = cli_in_process("close", "--month", oldest, env=env)
    assert by_hand.returncode == 0, by_hand.stderr
    assert table(settings.warehouse, "SELECT event_id FROM message_outbox") == [
        (f"statement/acme/{oldest}/v1",)
    ]
    rest = cli_in_process("close", env=env)
    assert rest.returncode == 0, rest.stderr
    queued = table(settings.warehouse, "SELECT event_id FROM message_outbox ORDER BY 1")
    closed = table(settings.warehouse, "SELECT strftime(month, '%Y-%m') FROM statement_closes")
    latest = max(m for (m,) in closed)
    assert queued == sorted([(f"statement/acme/{m}/v1",) for m in {oldest, latest}])
    listed = cli_in_process("statements", "list", env=env).stdout
    if len(closed) > 2:  # the rest was several months at once: all but its latest held back
        held = "not sent: closed with later months at once; send it with `creditlens close"
        assert held in listed


@pytest.mark.slow
def test_a_closed_month_whose_entries_vanished_is_restated_to_what_remains(copy: Copy) -> None:
    """The platform stops serving a closed month's entries: the month is restated to no
    movement at all, each line's why `entries removed`, never left as it was issued."""
    import duckdb

    env, settings = copy()
    assert cli_in_process("close", env=env).returncode == 0
    ((month,),) = table(settings.warehouse, "SELECT min(month) FROM statement_closes")
    with duckdb.connect(str(settings.warehouse)) as con:
        con.execute("DELETE FROM ledger_entries WHERE date_trunc('month', entry_day) = ?", [month])
    assert cli_in_process("sync", "--full-reconcile", env=env).returncode == 0
    restated = table(  # the close that follows the sync restated it
        settings.warehouse,
        f"SELECT line, now, why FROM statement_restatements WHERE month = '{month}'",
    )
    assert restated, "the vanished month was not restated"
    debits = next(r for r in restated if r[0] == "debits")
    assert debits[1] == 0 and debits[2].startswith("entries removed")
    ((version,),) = table(
        settings.warehouse, f"SELECT max(version) FROM statement_closes WHERE month = '{month}'"
    )
    assert version == 2


def test_a_refusal_to_close_names_the_accounts_own_failure(copy: Copy, tmp_path: Path) -> None:
    env, settings = copy()
    month = table(settings.warehouse, "SELECT strftime(max(month), '%Y-%m') FROM monthly_statement")
    rejected = {**env, "CREDITLENS_API_KEY": "sk_rejected_by_the_platform_0000"}
    assert cli_in_process("sync", env=rejected).returncode == 1
    done = cli_in_process("close", "--month", month[0][0], env=rejected)
    assert done.returncode == 1
    assert "its latest sync failed (account acme: " in done.stderr
    assert "not reconciled" not in done.stderr


def test_a_check_reads_only_the_months_rewritten_since_and_those_not_closed(copy: Copy) -> None:
    """A daily sync's check follows what changed (docs/statements.md): the first check reads
    every month; the next, with no reconciliation between them, only the months not closed yet;
    a full reconciliation since makes it read every month again."""
    _, settings = copy()
    path = settings.warehouse
    ((months,),) = table(path, "SELECT count(*) FROM monthly_statement")
    first = check_closes(settings.open_warehouse(), settings)
    assert first.issued and first.checked.startswith(f"checked {months} month(s)")
    second = check_closes(settings.open_warehouse(), settings)
    assert not second.issued and not second.restated
    assert second.checked.startswith(f"checked {months - len(first.issued)} month(s)")
    settings.open_warehouse().append(
        "reconciliation_runs",
        [{**row, "checked_at": row["checked_at"] + timedelta(seconds=1), "reconciled_from": None}
         for row in _latest_run(path)],
    )  # fmt: skip
    third = check_closes(settings.open_warehouse(), settings)
    assert third.checked.startswith(f"checked {months} month(s)") and not third.restated


def _latest_run(path: Path) -> list[dict[str, object]]:
    names = [r[0] for r in table(path, "SELECT column_name FROM (DESCRIBE reconciliation_runs)")]
    rows = table(path, "SELECT * FROM reconciliation_runs ORDER BY checked_at DESC LIMIT 1")
    return [dict(zip(names, row, strict=True)) for row in rows]
