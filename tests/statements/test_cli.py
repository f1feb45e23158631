"""`creditlens close` and `creditlens statements list`: by hand, one line per outcome, exit 1
with one line when a month cannot close; and an agency whose one account's key is rejected
still closes the others' months."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.statements.close import last_day
from pipelines.warehouse import publish
from tests.alerts.receivers import receivers
from tests.conftest import Simulated
from tests.pipeline.helpers import cli_in_process, table
from tests.statements.conftest import Copy
from tests.statements.test_close import covered, previous_month


def test_close_by_hand_one_month_then_again(copy: Copy) -> None:
    env, settings = copy()
    month = previous_month(covered(settings.warehouse))
    listed = cli_in_process("statements", "list", env=env)
    assert (listed.returncode, listed.stdout) == (0, "no closed statements\n")
    first = cli_in_process("close", "--month", f"{month:%Y-%m}", env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0] == f"statement closed: acme {month:%Y-%m}"
    assert table(settings.warehouse, "SELECT DISTINCT month FROM statement_closes") == [(month,)]
    again = cli_in_process("close", "--month", f"{month:%Y-%m}", env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == (
        f"statement already closed: acme {month:%Y-%m} (version 1): sent again"
    )
    listed = cli_in_process("statements", "list", "--account", "acme", env=env)
    assert listed.stdout.startswith(f"acme {month:%Y-%m}  version 1  closed on ")


def test_a_month_that_cannot_close_yet_is_one_line_and_exit_1(copy: Copy) -> None:
    env, settings = copy(CREDITLENS_CLOSE_AFTER_DAYS="2")
    day = covered(settings.warehouse)
    month = day.replace(day=1)
    result = cli_in_process("close", "--month", f"{month:%Y-%m}", env=env)
    assert result.returncode == 1
    needed = last_day(month).toordinal() + 2
    assert result.stderr == (
        f"creditlens: error: acme {month:%Y-%m}: not closed: syncs cover up to {day}, closing "
        f"needs {day.fromordinal(needed)} (close_after_days 2)\n"
    )
    assert table(settings.warehouse, "SELECT count(*) FROM statement_closes") == [(0,)]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("close", "--month", "2026-13"), "creditlens: error: --month must look like 2025-03, "
         "got '2026-13'\n"),
        (("close", "--account", "nobody"), "creditlens: error: no account named 'nobody'; "
         "configured: acme\n"),
    ],
)  # fmt: skip
def test_bad_arguments_are_one_line(copy: Copy, args: tuple[str, ...], line: str) -> None:
    env, _ = copy()
    result = cli_in_process(*args, env=env)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", line)


ACCOUNTS = """
[[accounts]]
name = "acme"
base_url = "{url}"
api_key_env = "ACME_KEY"

[[accounts]]
name = "globex"
base_url = "{url}"
api_key_env = "GLOBEX_KEY"
"""


def test_one_rejected_key_does_not_stop_the_others_closing(
    simulated: Callable[..., Simulated], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """And the analyst copy is published once, after the month close wrote: not once by the
    sync and again by each step after it."""
    published: list[Path] = []
    real = publish.publish_now

    def counted(path: Path, target: Path, lock_timeout_s: float) -> object:
        published.append(target)
        return real(path, target, lock_timeout_s)

    monkeypatch.setattr(publish, "publish_now", counted)
    s = simulated("two_companies")
    config = tmp_path / "agency.toml"
    config.write_text(ACCOUNTS.format(url=s.url))
    env = {
        "CREDITLENS_CONFIG": str(config),
        "CREDITLENS_WAREHOUSE": str(tmp_path / "warehouse.duckdb"),
        "CREDITLENS_REPORTS_DIR": str(tmp_path / "reports"),
        "CREDITLENS_LEDGER_START": s.first_day.isoformat(),
        "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
        "ACME_KEY": s.sim.key_for("acme"),
        "GLOBEX_KEY": "a-key-the-platform-rejects",
        "CREDITLENS_CLOSE_AFTER_DAYS": "1",  # the previous month closes whatever today is
    }
    result = cli_in_process("sync", env=env, inherit=False)
    assert result.returncode == 1
    assert "creditlens: error: account globex: " in result.stderr
    month = previous_month(covered(tmp_path / "warehouse.duckdb"))
    (closed,) = [x for x in result.stdout.splitlines() if x.startswith("statements closed: ")]
    assert closed.startswith("statements closed: acme ") and f" to {month:%Y-%m} (" in closed
    found = table(tmp_path / "warehouse.duckdb", "SELECT DISTINCT account FROM statement_closes")
    assert found == [("acme",)]
    assert published == [tmp_path / "warehouse.analyst.duckdb"]


def test_closes_are_sent_once_and_listed_with_their_delivery(copy: Copy) -> None:
    """The glue end to end: `creditlens close` sends the first close's latest month once by
    e-mail (aiosmtpd) with its CSV and PDF, lists where it went, sends nothing again on a
    rerun, and sends an older month by hand."""
    with receivers() as (received, _, smtp_port):
        env, settings = copy(
            CREDITLENS_STATEMENT_CHANNELS="mail",
            MAIL_URL=f"mailto://127.0.0.1:{smtp_port}?from=cl@example.com&to=fin@example.com",
        )
        config = settings.warehouse.parent / "creditlens.toml"
        config.write_text('[[channels]]\nname = "mail"\nurl_env = "MAIL_URL"\n')
        env["CREDITLENS_CONFIG"] = str(config)
        month = previous_month(covered(settings.warehouse))
        first = cli_in_process("close", env=env)
        assert first.returncode == 0, first.stderr
        (mail,) = received.emails
        names = sorted(part.get_filename() for part in mail.iter_attachments())
        assert names == [
            f"statement-acme-{month:%Y-%m}-v1.csv",
            f"statement-acme-{month:%Y-%m}-v1.pdf",
        ]
        assert cli_in_process("close", env=env).returncode == 0
        assert len(received.emails) == 1  # once
        listed = cli_in_process("statements", "list", env=env).stdout.splitlines()
        latest = next(x for x in listed if x.startswith(f"acme {month:%Y-%m}"))
        assert "(delivered: mail 20" in latest
        earlier = previous_month(month)
        older = next(x for x in listed if x.startswith(f"acme {earlier:%Y-%m}"))
        assert "(delivered: not sent: closed with later months at once; send it with" in older
        by_hand = cli_in_process("close", "--month", f"{earlier:%Y-%m}", env=env)
        assert by_hand.returncode == 0, by_hand.stderr
        assert len(received.emails) == 2
        assert f"statement-acme-{earlier:%Y-%m}-v1.pdf" in {
            part.get_filename() for part in received.emails[1].iter_attachments()
        }


def test_a_month_without_entries_has_nothing_to_close(copy: Copy) -> None:
    env, settings = copy()
    result = cli_in_process("close", "--month", "2020-01", env=env)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "acme 2020-01: nothing to close: no entry that month\n"
    assert table(settings.warehouse, "SELECT count(*) FROM statement_closes") == [(0,)]
