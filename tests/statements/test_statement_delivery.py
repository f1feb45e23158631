"""Statements delivered by real local servers: an SMTP server (aiosmtpd) behind mailto://, an
HTTP receiver behind json:// and Mattermost's Slack-format webhook. Each close once per
channel, with its CSV and PDF byte for byte as rendered; summary only where files cannot go;
a digest with the consolidated statement; an account's first close sends its latest month; a
rerun queues and sends nothing; the accounts file's mistakes are one line."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.api.errors import ConfigurationError
from pipelines.config.alerting import alerting
from pipelines.config.settings import Settings
from pipelines.notify.delivery import deliver
from pipelines.statements import documents as docs
from pipelines.statements.close import ClosedStatement, Restatement, check_closes
from pipelines.statements.delivery import message_rows, queued_lines, send_pending
from pipelines.warehouse.outbox import enqueue
from tests.alerts.receivers import Received, receivers
from tests.pipeline.helpers import table
from tests.statements.conftest import Copy
from tests.statements.samples import restatement, statement
from tests.statements.test_statement_documents import read_csv
from transforms.aggregate import STATEMENT_MOVEMENTS

TOKEN = "mmostSeCrEt7webhook9token"
Closes = dict[tuple[str, date, int], tuple[ClosedStatement, Restatement | None]]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Received, int, int]]:
    with receivers() as found:
        yield found


class Install:
    """An installation with an accounts file, an empty warehouse (a copy of the session's, made
    by ``Warehouse.ensure``) and the receivers."""

    def __init__(
        self, folder: Path, servers: tuple[Received, int, int], empty_warehouse: Path
    ) -> None:
        shutil.copytree(empty_warehouse, folder, dirs_exist_ok=True)
        self.received, http_port, smtp_port = servers
        self.received.clear()
        self.folder = folder
        self.env = {
            "CREDITLENS_CONFIG": str(folder / "creditlens.toml"),
            "CREDITLENS_WAREHOUSE": str(folder / "warehouse.duckdb"),
            "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
            "MAIL_URL": f"mailto://127.0.0.1:{smtp_port}?from=cl@example.com&to=fin@example.com",
            "HOOK_URL": f"json://127.0.0.1:{http_port}/hook",
            "CHAT_URL": f"mmost://127.0.0.1:{http_port}/{TOKEN}",
        }
        self.closes: Closes = {}

    def write(self, accounts: str, statements: str = "") -> Settings:
        Path(self.env["CREDITLENS_CONFIG"]).write_text(
            f"""
{statements}
[[channels]]
name = "mail"
url_env = "MAIL_URL"

[[channels]]
name = "hook"
url_env = "HOOK_URL"

[[channels]]
name = "chat"
url_env = "CHAT_URL"

{accounts}
"""
        )
        self.settings = Settings.from_env(self.env, cwd=self.folder)
        self.warehouse = self.settings.open_warehouse()
        return self.settings

    def queue(
        self,
        issued: list[ClosedStatement],
        restated: list[Restatement] = (),  # type: ignore[assignment]
        first: set[str] | None = None,
        resend: bool = False,
    ) -> list[str]:
        for s in issued:
            self.closes[(s.account, s.month, s.version)] = (s, None)
        for r in restated:
            self.closes[(r.current.account, r.current.month, r.current.version)] = (r.current, r)
        rows = message_rows(
            self.settings, issued, restated, first or set(), resend, env=self.env, cwd=self.folder
        )
        queued = enqueue(self.warehouse.path, 5.0, rows, again=resend)
        return queued_lines(queued)

    def send(self) -> list[tuple[str, str]]:
        done = send_pending(
            self.warehouse,
            self.settings,
            lambda a, m, v: self.closes.get((a, m, v)),
            env=self.env,
            cwd=self.folder,
        )
        assert not done.warnings, done.warnings
        return done.sent


@pytest.fixture
def install(tmp_path: Path, servers: tuple[Received, int, int], empty_warehouse: Path) -> Install:
    return Install(tmp_path, servers, empty_warehouse)


ACCOUNTS = """
[[accounts]]
name = "acme"
statement_channels = ["mail", "hook", "chat"]

[[accounts]]
name = "beta"
"""


def _attachments(mail: object) -> dict[str, bytes]:
    return {
        part.get_filename(): part.get_payload(decode=True)  # type: ignore[attr-defined]
        for part in mail.iter_attachments()  # type: ignore[attr-defined]
    }


def test_a_close_is_emailed_once_with_its_csv_and_pdf_byte_for_byte(install: Install) -> None:
    install.write(ACCOUNTS)
    s = statement("acme")
    queued = install.queue([s, statement("beta")])
    assert queued == [
        f"statement message queued: statement/acme/2026-10/v1 for channel {c}"
        for c in ("mail", "hook", "chat")
    ]  # beta has no statement channels: nothing for it
    assert sorted(install.send()) == sorted(
        ("statement/acme/2026-10/v1", c) for c in ("mail", "hook", "chat")
    )
    (mail,) = install.received.emails
    assert mail["Subject"] == "creditlens statement: acme, October 2026"
    assert _attachments(mail) == {
        "statement-acme-2026-10-v1.csv": docs.statement_csv(s),
        "statement-acme-2026-10-v1.pdf": docs.statement_pdf(s),
    }
    text = mail.get_body(preferencelist=("plain",)).get_content()
    assert "Debits (usage): -1,250.125001" in text and "Closing balance" in text

    # json:// carries the files too, base64 in its payload; the Slack-format webhook cannot:
    # it gets the summary and where the files are.
    hook = [body for path, body in install.received.http if path == "/hook"]
    chat = [body for path, body in install.received.http if path != "/hook"]
    assert len(hook) == 1 and len(chat) == 1
    sent = {a["filename"]: base64.b64decode(a["base64"]) for a in hook[0]["attachments"]}
    assert sent == _attachments(mail)
    assert hook[0]["creditlens_event_id"] == "statement/acme/2026-10/v1"
    assert "attachments" not in chat[0] and "base64" not in str(chat[0])
    assert "\n- Debits (usage): -1,250.125001\n" in chat[0]["text"]
    assert (
        "Files: statement-acme-2026-10-v1.csv and statement-acme-2026-10-v1.pdf"
        in (chat[0]["text"])
    )

    # Once: the same close queued again (a rerun, a retry) queues and sends nothing.
    install.received.clear()
    assert install.queue([s]) == []
    assert install.send() == []
    assert install.received.http == [] and install.received.emails == []
    statuses = table(
        Path(install.env["CREDITLENS_WAREHOUSE"]), "SELECT DISTINCT status FROM message_outbox"
    )
    assert statuses == [("sent",)]
    assert TOKEN not in Path(install.env["CREDITLENS_WAREHOUSE"]).read_bytes().decode("latin-1")


def test_a_resend_by_hand_sends_the_same_files_again(install: Install) -> None:
    install.write('[[accounts]]\nname = "acme"\nstatement_channels = ["mail"]')
    s = statement("acme")
    install.queue([s])
    install.send()
    first = _attachments(install.received.emails[0])
    assert install.queue([s], resend=True) == [
        "statement message queued: statement/acme/2026-10/v1 for channel mail"
    ]
    install.send()
    assert len(install.received.emails) == 2
    assert _attachments(install.received.emails[1]) == first


def test_a_restatement_is_sent_once_with_its_changes(install: Install) -> None:
    install.write('[[accounts]]\nname = "acme"\nstatement_channels = ["mail"]')
    r = restatement("acme")
    assert install.queue([], [r]) == [
        "statement message queued: statement/acme/2026-10/v2 for channel mail"
    ]
    install.send()
    (mail,) = install.received.emails
    text = mail.get_body(preferencelist=("plain",)).get_content()
    assert "was -1,250.125001, now -1,257.625001, difference -7.50 (late entries)" in text
    assert _attachments(mail)["statement-acme-2026-10-v2.pdf"] == docs.statement_pdf(r.current, r)
    assert install.queue([], [r]) == []


def test_a_digest_sends_one_message_with_the_consolidated_statement(install: Install) -> None:
    install.write(
        ACCOUNTS.replace(', "hook", "chat"', ""),
        '[statements]\ndigest = true\nchannels = ["hook"]\n',
    )
    companies = [statement("acme"), statement("beta")]
    queued = install.queue(companies)
    digest = docs.digest_id(companies, [])
    assert queued == [
        "statement message queued: statement/acme/2026-10/v1 for channel mail",
        f"statement message queued: {digest} for channel hook",
    ]
    install.send()
    (hook,) = [body for path, body in install.received.http if path == "/hook"]
    assert hook["title"].startswith("creditlens statements: October 2026 (2 closed")
    files = {a["filename"]: base64.b64decode(a["base64"]) for a in hook["attachments"]}
    assert files["statements-2026-10.csv"] == docs.consolidated_csv(companies)
    assert files["statements-2026-10.pdf"] == docs.consolidated_pdf(companies)
    assert files["statement-beta-2026-10-v1.csv"] == docs.statement_csv(companies[1])
    assert len(files) == 6
    assert install.queue(companies) == []

    # A later check that only restates: a digest of its own, its consolidated statement the
    # restated version.
    install.received.clear()
    r = restatement("beta")
    assert install.queue([], [r]) == [
        f"statement message queued: {docs.digest_id([], [r])} for channel hook"
    ]
    install.send()
    ((_, hook),) = install.received.http
    files = {a["filename"]: base64.b64decode(a["base64"]) for a in hook["attachments"]}
    assert files["statements-2026-10.csv"] == docs.consolidated_csv([r.current])
    assert files["statement-beta-2026-10-v2.pdf"] == docs.statement_pdf(r.current, r)
    assert (
        "(0 closed, 1 restated)" in hook["title"]
        and "Total of the 1 statements" in (hook["message"])
    )


def test_an_accounts_first_close_sends_only_its_latest_month(install: Install) -> None:
    install.write('[[accounts]]\nname = "acme"\nstatement_channels = ["mail"]')
    months = [statement("acme", month=date(2026, m, 1)) for m in (8, 9, 10)]
    assert install.queue(months, first={"acme"}) == [
        "statement message queued: statement/acme/2026-10/v1 for channel mail"
    ]
    # The earlier ones are sent by hand.
    assert install.queue(months[:1], resend=True) == [
        "statement message queued: statement/acme/2026-08/v1 for channel mail"
    ]
    # Not a first close: every month closed is sent.
    assert len(install.queue([statement("acme", month=date(2026, 11, 1))])) == 1


def test_the_alerts_sender_leaves_statements_to_the_sender_with_their_files(
    install: Install,
) -> None:
    settings = install.write('[[accounts]]\nname = "acme"\nstatement_channels = ["mail"]')
    install.queue([statement("acme")])
    plain = deliver(install.warehouse, alerting(settings, install.env, install.folder), install.env)
    assert plain.sent == [] and install.received.emails == []
    assert install.send() == [("statement/acme/2026-10/v1", "mail")]


@pytest.mark.parametrize(
    ("accounts", "statements", "line"),
    [
        (
            '[[accounts]]\nname = "acme"\nstatement_channels = ["finance"]',
            "",
            'creditlens.toml: account "acme": statement_channels: no channel named "finance"; '
            "configured: mail, hook, chat",
        ),
        (
            '[[accounts]]\nname = "acme"',
            "[statements]\ndigest = true\n",
            "creditlens.toml: [statements]: channels: a digest needs its channels, e.g. "
            'channels = ["finance"]',
        ),
        (
            '[[accounts]]\nname = "acme"',
            '[statements]\ndigest = "yes"\nchannels = ["mail"]\n',
            "creditlens.toml: [statements]: digest: must be true or false",
        ),
        (
            '[[accounts]]\nname = "acme"',
            '[statements]\nchanels = ["mail"]\n',
            "creditlens.toml: [statements]: chanels: unknown field; the fields are digest, "
            "channels",
        ),
        (
            '[[accounts]]\nname = "acme"',
            '[statements]\nchannels = ["ops"]\n',
            'creditlens.toml: [statements]: channels: no channel named "ops"; configured: '
            "mail, hook, chat",
        ),
    ],
)
def test_a_mistake_in_statement_delivery_is_one_line(
    install: Install, accounts: str, statements: str, line: str
) -> None:
    with pytest.raises(ConfigurationError) as found:
        install.write(accounts, statements)
    assert str(found.value) == line


def test_a_stored_close_is_sent_once_with_files_rendered_from_the_warehouse(
    copy: Copy, servers: tuple[Received, int, int], tmp_path: Path
) -> None:
    """The whole way: a synced warehouse closed, its latest month queued (the account's first
    close), sent by the default sender, whose files are read back from the stored close."""
    received, _, smtp_port = servers
    received.clear()
    config = tmp_path / "creditlens.toml"
    config.write_text('[[channels]]\nname = "mail"\nurl_env = "MAIL_URL"\n')
    env, settings = copy(CREDITLENS_CONFIG=str(config), CREDITLENS_STATEMENT_CHANNELS="mail")
    env["MAIL_URL"] = f"mailto://127.0.0.1:{smtp_port}?from=cl@example.com&to=fin@example.com"
    warehouse = settings.open_warehouse()
    result = check_closes(warehouse, settings)
    assert len(result.issued) > 1 and result.first_close_accounts == {settings.account.name}
    latest = max(result.issued, key=lambda s: s.month)
    rows = message_rows(
        settings, result.issued, result.restated, result.first_close_accounts,
        env=env, cwd=tmp_path,
    )  # fmt: skip
    queued = queued_lines(enqueue(warehouse.path, 5.0, rows))
    assert queued == [f"statement message queued: {docs.event_id(latest)} for channel mail"]
    done = send_pending(warehouse, settings, env=env, cwd=tmp_path)
    assert done.sent == [(docs.event_id(latest), "mail")] and not done.warnings
    (mail,) = received.emails
    files = _attachments(mail)
    assert files == {
        docs.filename(latest, "csv"): docs.statement_csv(latest),
        docs.filename(latest, "pdf"): docs.statement_pdf(latest),
    }
    (row,) = read_csv(files[docs.filename(latest, "csv")])
    walked = Decimal(row["opening"]) + sum(Decimal(row[m]) for m in STATEMENT_MOVEMENTS)
    assert walked == Decimal(row["closing"]) == latest.line("closing")
    again = check_closes(warehouse, settings)
    assert not again.changed
    assert send_pending(warehouse, settings, env=env, cwd=tmp_path).sent == []


def test_a_message_whose_close_cannot_be_read_waits_with_one_warning(install: Install) -> None:
    install.write('[[accounts]]\nname = "acme"\nstatement_channels = ["mail"]')
    install.queue([statement("acme")])
    install.closes.clear()  # the stored close cannot be read back
    done = send_pending(
        install.warehouse, install.settings, lambda a, m, v: None, env=install.env,
        cwd=install.folder,
    )  # fmt: skip
    assert done.sent == [] and install.received.emails == []
    (line,) = done.warnings
    assert line.startswith(
        "statements: channel mail: 1 message not delivered (its files could not be made "
        "(LookupError: no stored close of acme 2026-10 version 1)); kept in the outbox"
    )
