"""Alerts delivered by real local servers: an HTTP receiver behind json://, Mattermost's
Slack-format webhook (mmost://) and an SMTP server behind mailto://. Once per crossing across
reruns, recovery once, nothing lost while a channel is down, a resend after a sender died
between sending and recording carries the same id, acknowledged alerts stay silent until they
recover, and no channel token in any file or output."""

from __future__ import annotations

import json
import re
import signal
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.alerts.observe import credits
from pipelines.config.alert_rules import Alerting
from pipelines.config.alerting import alerting
from pipelines.config.settings import Settings
from pipelines.notify.delivery import LEASE, deliver
from tests.alerts.helpers import CHANNELS, above, balance
from tests.alerts.receivers import Received
from tests.pipeline.helpers import cli, cli_in_process, table

TOKEN = "xoxbSeCrEt4chan8neltoken"
Setup = tuple[dict[str, str], Received, int, int]


def _write(
    env: dict[str, str], threshold: int | None = None, channels: str = '"hook", "chat", "mail"'
) -> None:
    threshold = above(env) if threshold is None else threshold
    Path(env["CREDITLENS_CONFIG"]).write_text(f"""{CHANNELS}
[[alerts]]
name = "low-balance"
kind = "balance_below"
threshold = {threshold}
channels = [{channels}]
""")


def _env(setup: Setup, hook_port: int | None = None) -> dict[str, str]:
    env, _, http_port, smtp_port = setup
    return {
        **env,
        "HOOK_URL": f"json://127.0.0.1:{hook_port or http_port}/hook",
        "CHAT_URL": f"mmost://127.0.0.1:{http_port}/{TOKEN}",
        "MAIL_URL": f"mailto://127.0.0.1:{smtp_port}?from=alerts@example.com&to=ops@example.com",
    }


def _ids(received: Received) -> list[str]:
    return re.findall(r"creditlens alert (al-[0-9a-f]+/\d+)", "\n".join(received.texts()))


def _check(env: dict[str, str]) -> tuple[int, str, str]:
    done = cli_in_process("alerts", "check", env=env)
    return done.returncode, done.stdout, done.stderr


def test_once_per_crossing_and_recovery_once_on_every_channel(setup: Setup) -> None:
    env, received = _env(setup), setup[1]
    shown = credits(balance(env))
    _write(env)  # the balance is under the threshold: firing
    code, out, err = _check(env)
    assert code == 0, err
    assert "alert firing: low-balance on acme" in out
    (first,) = set(_ids(received))
    assert len(_ids(received)) == 3  # one per channel
    hook = next(body for path, body in received.http if path == "/hook")
    assert hook["creditlens_event_id"] == first  # the id in the json:// payload too
    chat = next(body for path, body in received.http if path.startswith("/hooks/"))
    assert shown in chat["text"] and credits(Decimal(above(env))) in chat["text"]
    assert received.mail[0].startswith("Subject: creditlens ERROR: low-balance on acme")

    received.clear()
    assert _check(env)[0] == 0
    assert received.texts() == []  # unchanged state: nothing on a rerun
    _write(env, int(balance(env) / Decimal("1.03")))  # over the line, within 5% of it: no flap
    assert _check(env)[0] == 0
    assert received.texts() == []
    _write(env, int(balance(env) / Decimal("1.10")))  # past the line by more than 5%: recovered
    code, out, _ = _check(env)
    assert "alert recovered: low-balance on acme" in out
    recovered = set(_ids(received))
    assert len(_ids(received)) == 3 and recovered == {first.replace("/1", "/2")}
    assert all("recovered" in text for text in received.texts())
    received.clear()
    _check(env)
    assert received.texts() == []
    events = table(Path(env["CREDITLENS_WAREHOUSE"]), "SELECT state FROM alert_events ORDER BY seq")
    assert events == [("firing",), ("recovered",)]


def test_a_channel_down_keeps_its_messages_until_it_comes_back(setup: Setup) -> None:
    from tests.alerts.receivers import free_port

    received = setup[1]
    down = _env(setup, hook_port=free_port())  # nothing listens there
    _write(down, None, '"hook"')
    code, _, err = _check(down)
    assert code == 0
    (line,) = err.strip().splitlines()
    assert line.startswith("creditlens: warning: alerts: channel hook: 1 message not delivered")
    assert "kept in the outbox" in line and "127.0.0.1" not in line
    assert received.texts() == []
    settings = _settings(down)
    later = datetime.now(UTC) + timedelta(hours=2)
    still_down = deliver(settings.open_warehouse(), _rules(down), down, now=later)
    assert still_down.sent == [] and len(still_down.warnings) == 1
    up = _env(setup)
    back = deliver(settings.open_warehouse(), _rules(up), up, now=later + timedelta(hours=2))
    assert len(back.sent) == 1 and back.warnings == []
    assert len(_ids(received)) == 1
    received.clear()
    _check(up)  # delivered once: nothing again
    assert received.texts() == []


@pytest.mark.slow  # a real SIGKILL of a child process
def test_a_sender_killed_between_sending_and_recording_resends_with_the_same_id(
    setup: Setup,
) -> None:
    env, received = _env(setup), setup[1]
    _write(env, None, '"hook"')
    killed = cli("alerts", "check", env={**env, "CREDITLENS_FAILPOINT": "alert_sent"})
    assert killed.returncode == -signal.SIGKILL
    (first,) = received.texts()  # it was sent before the process died
    (event_id,) = _ids(received)
    settings = _settings(env)
    assert deliver(settings.open_warehouse(), _rules(env), env).sent == []  # still claimed
    after_lease = datetime.now(UTC) + LEASE + timedelta(seconds=1)
    resent = deliver(settings.open_warehouse(), _rules(env), env, now=after_lease)
    assert resent.sent == [(event_id, "hook")]
    again = received.texts()[1]
    assert event_id in again and "sent again" in again and "sent again" not in first
    received.clear()
    _check(env)
    assert received.texts() == []  # recorded now: never a third time


def test_an_acknowledged_alert_is_silent_until_it_recovers(setup: Setup) -> None:
    from tests.alerts.receivers import free_port

    received = setup[1]
    down = _env(setup, hook_port=free_port())
    _write(down, None, '"hook"')
    _check(down)
    listed = cli_in_process("alerts", "list", env=down).stdout
    alert_id = listed.split()[0]
    assert alert_id.startswith("al-") and "low-balance" in listed
    done = cli_in_process("alerts", "ack", alert_id, "--reason", "top-up ordered", env=down)
    assert done.returncode == 0 and "silent until it recovers" in done.stdout
    unknown = cli_in_process("alerts", "ack", "al-000000000000", "--reason", "x", env=down)
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == (
        "creditlens: error: no alert 'al-000000000000': see `creditlens alerts list --all`"
    )
    assert cli_in_process("alerts", "list", env=down).stdout.strip() == "no open alerts"
    assert "top-up ordered" in cli_in_process("alerts", "list", "--all", env=down).stdout
    up = _env(setup)
    _check(up)
    assert received.texts() == []  # its queued firing message was dropped by the ack
    _write(up, int(balance(up) / 2), '"hook"')
    _check(up)
    assert len(_ids(received)) == 1 and "recovered" in received.texts()[0]


def test_channel_test_and_no_token_anywhere(setup: Setup) -> None:
    env, received = _env(setup), setup[1]
    _write(env, None, '"chat"')
    done = cli_in_process("alerts", "test", "chat", env=env)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.strip() == "channel chat: accepted the test message"
    refused = cli_in_process("alerts", "test", "chat", env={**env, "CHAT_URL": "nonsense://x"})
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "channel chat: did not accept the test message: CHAT_URL: it holds no URL Apprise "
        "knows (value not shown)"
    )
    outputs = [done.stdout, done.stderr, *_check(env)[1:]]
    outputs += [cli_in_process("alerts", "list", "--all", env=env).stdout]
    assert len(received.texts()) == 2
    folder = Path(env["CREDITLENS_WAREHOUSE"]).parent
    files = [p for p in folder.rglob("*") if p.is_file() and p.name != "creditlens.toml"]
    assert any(p.suffix == ".duckdb" for p in files)
    for path in files:
        assert TOKEN.encode() not in path.read_bytes(), path
    for text in outputs:
        assert TOKEN not in text


def _settings(env: dict[str, str]) -> Settings:
    return Settings.from_env(env, cwd=Path(env["CREDITLENS_WAREHOUSE"]).parent)


def _rules(env: dict[str, str]) -> Alerting:
    return alerting(_settings(env), env, Path(env["CREDITLENS_WAREHOUSE"]).parent)


def test_listing_shows_where_and_when_it_was_delivered(setup: Setup) -> None:
    env = _env(setup)
    _write(env, None, '"hook"')
    _check(env)
    listed = json.dumps(cli_in_process("alerts", "list", env=env).stdout)
    assert "delivered: hook 20" in listed


def test_the_site_has_an_alerts_page_and_a_banner(setup: Setup, tmp_path: Path) -> None:
    from dashboards.site import build_site

    env = _env(setup)
    _write(env, None, '"hook"')
    _check(env)
    site = build_site(Path(env["CREDITLENS_WAREHOUSE"]), tmp_path / "site", lock_timeout_s=5.0)
    page = (tmp_path / "site" / "alerts.html").read_text()
    assert len(set(re.findall(r"al-[0-9a-f]{12}", page))) == 1
    assert "low-balance" in page and "hook 20" in page  # delivered where and when
    overview = site.overviews["acme"].read_text()
    assert "1 alert firing for acme" in overview and credits(balance(env)) in overview
    assert 'href="alerts.html"' in (tmp_path / "site" / "index.html").read_text()


def test_stale_fires_without_a_sync_and_says_how_long(setup: Setup) -> None:
    env = _env(setup)
    Path(env["CREDITLENS_CONFIG"]).write_text(
        '[[channels]]\nname = "hook"\nurl_env = "HOOK_URL"\n\n'
        '[[alerts]]\nname = "stale"\nkind = "stale"\nhours = 0.0001\nchannels = ["hook"]\n'
    )
    code, out, _ = _check(env)
    assert code == 0 and "alert firing: stale on acme" in out
    (text,) = setup[1].texts()
    assert "no successful sync for" in text and "limit 0 hours" in text
