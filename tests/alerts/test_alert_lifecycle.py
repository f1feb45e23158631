"""Every alert that opens has an end, failures alert at once, and each message says what to do.

Against the real simulator, real warehouses, and real receivers (an HTTP server behind json://
and mmost://, aiosmtpd behind mailto://), through the `creditlens` command's own entry point.
Each test names the failure of docs/alerts.md it guards: a key rejected at onboarding that
alerted nobody, a sync whose accounts all failed that alerted nobody, events that never ended,
an acknowledgement that muted the next crossing, budgets that sent three messages at once.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterInstance

from pipelines.alerts.checking import check_rules
from pipelines.config.alert_rules import Alerting, Channel, Rule
from pipelines.config.settings import Settings
from pipelines.warehouse.writer import Warehouse
from tests.alerts.helpers import CHANNELS, above, channel_urls, low_balance
from tests.alerts.receivers import Received
from tests.conftest import creditlens_variables, serving
from tests.pipeline.helpers import cli_in_process, table

Setup = tuple[dict[str, str], Received, int, int]


def _hooks(received: Received) -> list[dict]:
    return [body for path, body in received.http if path.endswith("/hook")]


def _alerts(env: dict[str, str], *args: str) -> list[str]:
    done = cli_in_process("alerts", "list", *args, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


# -- failures alert (1 and 2 of docs/alerts.md's list of what went unsaid) -------------------


@pytest.mark.slow
def test_a_key_rejected_at_onboarding_fires_sync_failed_at_once_then_recovers(
    tmp_path: Path, servers: tuple[Received, int, int]
) -> None:
    received, http_port, smtp_port = servers
    received.clear()
    with serving("alerts") as s:
        keys = {
            c.name: next(k.secret for k in c.keys if k.scope == "full") for c in s.sim.companies
        }
        (tmp_path / "agency.toml").write_text(
            f"""
[[accounts]]
name = "newco"
base_url = "{s.url}"
api_key_env = "NEWCO_KEY"
{CHANNELS}
[[alerts]]
name = "failed"
kind = "sync_failed"
channels = ["hook"]

[[alerts]]
name = "stale"
kind = "stale"
hours = 0.00001
channels = ["hook"]
"""
        )
        env = {
            "CREDITLENS_CONFIG": str(tmp_path / "agency.toml"),
            "CREDITLENS_WAREHOUSE": str(tmp_path / "warehouse.duckdb"),
            "CREDITLENS_REPORTS_DIR": str(tmp_path / "reports"),
            "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
            "NEWCO_KEY": "sk_not_a_key_the_platform_knows_0000",
            **channel_urls(http_port, smtp_port),
        }
        done = cli_in_process("sync", env=env)
        assert done.returncode == 1
        assert "creditlens: error: account newco" in done.stderr
        # Told in the same sync, not at a later `alerts check`: the failure and its staleness.
        fired = sorted(b["title"] for b in _hooks(received))
        assert fired == [
            "creditlens ERROR: failed on newco",
            "creditlens WARN: stale on newco",
        ], fired
        failed = next(b for b in _hooks(received) if "failed" in b["title"])
        assert failed["type"] == "failure" and "newco" in failed["message"]
        assert (
            "Next:" in failed["message"] and "creditlens sync --account newco" in failed["message"]
        )
        assert (
            "first try was" in next(b for b in _hooks(received) if "stale" in b["title"])["message"]
        )
        listed = _alerts(env)
        assert len(listed) == 2 and all("[firing]" in line for line in listed)
        received.clear()
        assert cli_in_process("sync", env=env).returncode == 1  # fails again: nothing new
        assert _hooks(received) == []

        env["NEWCO_KEY"] = keys["burnco"]  # the key fixed (burnco's data behind the name newco)
        config = tmp_path / "agency.toml"  # and staleness judged over an hour from now on
        config.write_text(config.read_text().replace("hours = 0.00001", "hours = 1"))
        assert cli_in_process("sync", env=env).returncode == 0
        recovered = sorted((b["title"], b["type"]) for b in _hooks(received))
        assert recovered == [
            ("creditlens recovered: failed on newco", "success"),
            ("creditlens recovered: stale on newco", "success"),
        ]
        assert _alerts(env) == ["no open alerts"]


def test_a_lone_account_whose_settings_fail_is_recorded_and_alerted(
    setup: Setup,
) -> None:
    env, received, http_port, smtp_port = setup
    Path(env["CREDITLENS_CONFIG"]).write_text(
        CHANNELS + '\n[[alerts]]\nname = "failed"\nkind = "sync_failed"\nchannels = ["hook"]\n'
    )
    broken = {**env, **channel_urls(http_port, smtp_port)}
    broken.pop("CREDITLENS_API_KEY")
    done = cli_in_process("sync", env=broken)
    assert done.returncode == 1 and "CREDITLENS_API_KEY is not set" in done.stderr
    warehouse = Path(env["CREDITLENS_WAREHOUSE"])
    rows = table(
        warehouse,
        "SELECT step, result FROM sync_outcomes WHERE sync_id = "
        "(SELECT arg_max(sync_id, recorded_at) FROM sync_outcomes) ORDER BY recorded_at, step",
    )
    assert ("settings", "failed") in rows and ("ledger", "skipped") in rows
    (hook,) = _hooks(received)
    assert hook["title"].startswith("creditlens ERROR: failed on ")
    assert "CREDITLENS_API_KEY is not set" in hook["message"]
    status = table(warehouse, "SELECT status FROM account_status")
    assert status == [("failing",)]


# -- every event has an end; an acknowledgement belongs to one crossing (3 and 4) -------------


@pytest.mark.slow
def test_a_hidden_movement_recovers_when_its_finding_is_acknowledged(
    tmp_path: Path, servers: tuple[Received, int, int]
) -> None:
    received, http_port, smtp_port = servers
    received.clear()
    with serving("alerts") as s:
        spikeco = next(c for c in s.sim.companies if c.name == "spikeco")
        key = next(k.secret for k in spikeco.keys if k.scope == "full")
        env = creditlens_variables(
            s, tmp_path, CREDITLENS_CONFIG=str(tmp_path / "creditlens.toml"),
            CREDITLENS_API_KEY=key, CREDITLENS_ACCOUNT="spikeco",
            CREDITLENS_LEDGER_START=(s.sim.clock.now - timedelta(days=89)).date().isoformat(),
            **channel_urls(http_port, smtp_port),
        )  # fmt: skip
        (tmp_path / "creditlens.toml").write_text(
            CHANNELS + '\n[[alerts]]\nname = "moves"\nkind = "hidden_movement"\n'
            'channels = ["hook"]\n'
        )
        assert cli_in_process("sync", env=env).returncode == 0
        (fired,) = _hooks(received)
        assert (
            fired["type"] == "warning"
            and "creditlens breaks list --account spikeco" in (fired["message"])
        )
        (line,) = _alerts(env)
        alert_id = line.split()[0]
        break_id = re.search(r"\((hm-[0-9a-f]+|br-[0-9a-f]+|[a-z]+-[0-9a-f]{6,})\)", line)
        assert break_id, line
        received.clear()
        acked = cli_in_process(
            "breaks", "ack", break_id[1], "--reason", "a manual credit, ticket 42", env=env
        )
        assert acked.returncode == 0, acked.stderr
        assert cli_in_process("alerts", "check", env=env).returncode == 0
        (ended,) = _hooks(received)
        assert ended["title"] == "creditlens recovered: moves on spikeco"
        assert ended["type"] == "success"
        assert _alerts(env) == ["no open alerts"]
        states = table(
            tmp_path / "warehouse.duckdb",
            f"SELECT state FROM alert_events WHERE alert_id = '{alert_id}' ORDER BY seq",
        )
        assert states == [("firing",), ("recovered",)]


def test_an_acknowledgement_belongs_to_one_crossing(setup: Setup) -> None:
    env, received, http_port, smtp_port = setup
    env = {**env, **channel_urls(http_port, smtp_port)}
    config = Path(env["CREDITLENS_CONFIG"])

    def rule(threshold: int) -> None:
        config.write_text(
            CHANNELS + f'\n[[alerts]]\nname = "low"\nkind = "balance_below"\n'
            f'threshold = {threshold}\nchannels = ["hook"]\n'
        )

    rule(above(env))
    assert cli_in_process("alerts", "check", env=env).returncode == 0
    (line,) = _alerts(env)
    alert_id = line.split()[0]
    first = cli_in_process("alerts", "ack", alert_id, "--reason", "top-up ordered", env=env)
    assert first.returncode == 0 and "silent until it recovers" in first.stdout
    again = cli_in_process("alerts", "ack", alert_id, "--reason", "twice", env=env)
    assert again.returncode == 1
    assert again.stderr.startswith(f"creditlens: error: alert {alert_id} (low on ")
    assert "not firing" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    rule(1)  # the balance is far above: recovered, and its recovery is sent
    received.clear()
    assert cli_in_process("alerts", "check", env=env).returncode == 0
    assert [b["title"].split(":")[0] for b in _hooks(received)] == ["creditlens recovered"]
    late = cli_in_process("alerts", "ack", alert_id, "--reason", "too late", env=env)
    assert late.returncode == 1 and "is recovered, not firing" in late.stderr
    rule(above(env))  # below again: a new crossing, never muted by the first one's ack
    received.clear()
    assert cli_in_process("alerts", "check", env=env).returncode == 0
    (news,) = _hooks(received)
    assert news["title"].startswith("creditlens ERROR: low on") and news["type"] == "failure"


# -- budgets: one message, words that agree; a rule that fails stops no other (5) -------------


def _mid_month() -> datetime:
    """An evaluation's now with a month of spend behind it, whatever today is: the 15th at noon
    of the month 16 days ago (the shared warehouse holds 90 days). On a 1st just after midnight
    the month to date has spent nothing, and no budget crosses anything."""
    day = (datetime.now(UTC) - timedelta(days=16)).date().replace(day=15)
    return datetime(day.year, day.month, day.day, 12, tzinfo=UTC)


def test_several_budget_levels_crossed_at_once_are_one_message(setup: Setup) -> None:
    from pipelines.config.alerting import alerting
    from pipelines.notify.delivery import deliver

    env, received, http_port, smtp_port = setup
    env = {**env, **channel_urls(http_port, smtp_port)}
    Path(env["CREDITLENS_CONFIG"]).write_text(
        CHANNELS + '\n[[alerts]]\nname = "budget"\nkind = "budget"\ndimension = "account"\n'
        'monthly_limit = 1\nchannels = ["hook"]\n'
    )
    settings = Settings.from_env(env)
    config = alerting(settings, env, Path(env["CREDITLENS_CONFIG"]).parent)
    warehouse = Warehouse(settings.warehouse, lock_timeout_s=5.0)
    check_rules(warehouse, config, [settings.account.name], now=_mid_month())
    assert deliver(warehouse, config, env, now=_mid_month()).sent
    (message,) = _hooks(received)
    assert message["title"].endswith(", 100%") and message["type"] == "warning"
    text = message["message"]
    assert "- Level: 100%: 1 credits" in text and "- Also crossed: 80%" in text
    share = re.search(r"- Share: ([\d,.]+)% of the monthly limit 1\b", text)
    assert share and Decimal(share[1].replace(",", "")) >= 100
    states = table(
        Path(env["CREDITLENS_WAREHOUSE"]),
        "SELECT dimension_value, state FROM alert_events WHERE rule = 'budget' ORDER BY 1",
    )
    assert ("100%", "firing") in states and ("80%", "firing") in states  # each recorded


@pytest.mark.parametrize("field", ["monthly_limit", "threshold", "min_credits", "hours", "days"])
def test_a_zero_limit_is_one_line_naming_the_file_the_rule_and_the_field(
    setup: Setup, field: str
) -> None:
    env = setup[0]
    kind = {"monthly_limit": "budget", "threshold": "balance_below", "days": "runway_below",
            "min_credits": "spend_anomaly", "hours": "stale"}[field]  # fmt: skip
    extra = 'dimension = "account"\n' if kind in ("budget", "spend_anomaly") else ""
    Path(env["CREDITLENS_CONFIG"]).write_text(
        f'[[alerts]]\nname = "r"\nkind = "{kind}"\n{extra}{field} = 0\n'
    )
    done = cli_in_process("alerts", "check", env=env)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("creditlens: error: ") and "creditlens.toml" in line
    assert line.endswith(f'creditlens.toml: alert "r": {field}: must be more than 0, got 0')


def test_a_rule_that_fails_for_one_account_is_one_warning_and_the_others_still_run(
    setup: Setup,
) -> None:
    env = setup[0]
    Path(env["CREDITLENS_CONFIG"]).write_text(CHANNELS)
    settings = Settings.from_env(env)
    hook = Channel("hook", "HOOK_URL")
    broken = Rule("broken", "budget", dimension="account", monthly_limit=Decimal(0))
    low = Rule("low", "balance_below", threshold=Decimal(above(env)))
    result = check_rules(
        Warehouse(settings.warehouse, lock_timeout_s=5.0),
        Alerting((broken, low), {"hook": hook}),
        [settings.account.name],
        now=_mid_month(),  # a month with spend: the broken budget divides by its 0
    )
    (warning,) = result.warnings
    assert warning.startswith(f"alert broken: account {settings.account.name}: not evaluated (")
    assert [c.observation.rule.name for c in result.changes] == ["low"]


# -- messages a person acts on (6); Dagster tells the same story (9) ---------------------------


def test_each_service_gets_lines_its_severity_and_the_next_step(setup: Setup) -> None:
    env, received, http_port, smtp_port = setup
    env = {
        **env,
        **channel_urls(http_port, smtp_port),
        "CREDITLENS_SITE_URL": "https://r.example.com",
    }
    Path(env["CREDITLENS_CONFIG"]).write_text(low_balance(env, '"hook", "chat", "mail"'))
    assert cli_in_process("alerts", "check", env=env).returncode == 0
    (hook,) = _hooks(received)
    assert hook["type"] == "failure"
    lines = hook["message"].splitlines()
    assert any(line.startswith("- Balance: ") for line in lines)
    assert any(line.startswith("- Short by: ") for line in lines)
    assert any(line.startswith("**Next:** top up at least ") for line in lines)
    account = Settings.from_env(env).account.name
    assert f"Report: https://r.example.com/accounts/{account}/index.html" in lines
    chat = next(body for path, body in received.http if "chattoken" in path)
    assert "\n- Balance: " in chat["text"]  # Mattermost renders the Markdown lines
    (mail,) = received.emails
    text = mail.get_body(preferencelist=("plain",)).get_content()
    html = mail.get_body(preferencelist=("html",)).get_content()
    assert re.search(r"\n\s*-? ?Balance: ", text) and "\n" in text.strip()
    assert "<li>Balance: " in html and "<strong>Next:</strong>" in html


@pytest.mark.slow
def test_the_cli_records_the_alerts_asset_and_its_checks_in_dagster(
    setup: Setup, tmp_path: Path
) -> None:
    env, _, http_port, smtp_port = setup
    home = tmp_path / "dagster-home"
    env = {**env, **channel_urls(http_port, smtp_port), "DAGSTER_HOME": str(home)}
    env.pop("CREDITLENS_DAGSTER_INSTANCE")  # the product's default: a persistent instance
    Path(env["CREDITLENS_CONFIG"]).write_text(low_balance(env, '"hook"'))
    home.mkdir()
    assert cli_in_process("alerts", "check", env=env).returncode == 0
    (line,) = _alerts(env)
    alert_id = line.split()[0]

    def latest() -> tuple[bool, str]:
        with DagsterInstance.from_config(str(home)) as dagster_instance:
            mat = dagster_instance.get_latest_materialization_event(AssetKey("alerts"))
            assert mat is not None
            key = AssetCheckKey(AssetKey("alerts"), "alert_low")
            record = dagster_instance.get_latest_asset_check_evaluation_record(key)
            assert record is not None and record.evaluation is not None
            return record.evaluation.passed, str(record.evaluation.metadata["alert_ids"].value)

    assert latest() == (False, alert_id)  # the same alert `alerts list` shows, failing
    assert cli_in_process("alerts", "ack", alert_id, "--reason", "known", env=env).returncode == 0
    assert latest() == (True, "none")  # acknowledged: the check passes, as the list is empty
    assert _alerts(env) == ["no open alerts"]


def test_an_alert_message_older_than_its_expiry_is_recorded_expired_not_sent(
    setup: Setup,
) -> None:
    from pipelines.config.alerting import alerting
    from pipelines.notify.delivery import Bounds, deliver

    env, received, http_port, smtp_port = setup
    env = {**env, **channel_urls(http_port, smtp_port)}
    Path(env["CREDITLENS_CONFIG"]).write_text(low_balance(env, '"hook"'))
    settings = Settings.from_env(env)
    warehouse = Warehouse(settings.warehouse, lock_timeout_s=5.0)
    config = alerting(settings, env, Path(env["CREDITLENS_CONFIG"]).parent)
    check_rules(warehouse, config, [settings.account.name])  # queued now, not yet sent
    later = datetime.now(UTC) + timedelta(days=4)
    done = deliver(warehouse, config, env, now=later, bounds=Bounds(expire_after=timedelta(3)))
    assert done.sent == [] and _hooks(received) == []
    (warning,) = done.warnings
    assert "1 message(s) not sent" in warning and "expired" in warning
    assert table(settings.warehouse, "SELECT status FROM message_outbox") == [("expired",)]
    assert deliver(warehouse, config, env, now=later).sent == []  # never sent later either


def test_a_late_sender_cannot_overwrite_what_another_recorded(setup: Setup) -> None:
    from pipelines.warehouse.outbox import claim, finish

    env = setup[0]
    Path(env["CREDITLENS_CONFIG"]).write_text(low_balance(env, '"hook"'))
    settings = Settings.from_env(env)
    assert cli_in_process("alerts", "check", env={**env, "HOOK_URL": ""}).returncode == 0
    path, now = settings.warehouse, datetime.now(UTC) + timedelta(hours=2)  # past the backoff
    (slow,) = claim(path, 5.0, now, timedelta(minutes=10), "slow:1").rows
    # The slow sender's lease runs out; another claims the row and delivers it.
    later = now + timedelta(minutes=11)
    (fast,) = claim(path, 5.0, later, timedelta(minutes=10), "fast:2").rows
    assert fast.resend
    assert finish(path, 5.0, fast, "fast:2", sent_at=later)
    # The slow sender's failure arrives at last: it holds no claim, so it changes nothing.
    assert not finish(path, 5.0, slow, "slow:1", retry_at=later, error="HOOK_URL: timeout")
    assert table(path, "SELECT status, claimed_by FROM message_outbox") == [("sent", "fast:2")]


# -- anomaly days: every day since the last judged, however long the gap (5 of the list) -------


@pytest.mark.slow
def test_every_day_since_the_last_one_judged_is_judged_after_a_long_gap(
    tmp_path: Path, servers: tuple[Received, int, int]
) -> None:
    """A spike nine days back, after ten days without a sync: judged (an evaluation used to
    judge the latest seven days only), against the same weekdays before it."""
    from simulator.scenario import CompanySpec, Scenario, SpendSpikeSpec

    received, http_port, smtp_port = servers
    received.clear()
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=10)
    spiky = Scenario(
        name="gap",
        companies=[
            CompanySpec(
                name="acme", history_days=90, entries_per_day=40, agents=2, campaigns=2,
                spend_spikes=[SpendSpikeSpec(days_ago=-1, factor=20.0, agent=0)],
            )
        ],
    )  # fmt: skip
    with serving(spiky, now=start) as s:
        env = creditlens_variables(
            s, tmp_path, CREDITLENS_CONFIG=str(tmp_path / "creditlens.toml"),
            CREDITLENS_ANOMALY_GRACE_HOURS="0", **channel_urls(http_port, smtp_port),
            # The first sync read up to today, past the simulator's now: the second re-reads
            # the days it had not served yet, as it would the platform's late entries.
            CREDITLENS_LOOKBACK_DAYS="14",
        )  # fmt: skip
        (tmp_path / "creditlens.toml").write_text(
            CHANNELS + '\n[[alerts]]\nname = "spike"\nkind = "spend_anomaly"\n'
            'dimension = "agent"\nmin_credits = 0.1\nchannels = ["hook"]\n'
        )
        assert cli_in_process("sync", env=env).returncode == 0
        spike_day = (start + timedelta(days=1)).date()
        before = [b["title"] for b in _hooks(received)]  # the day before the spike's verdict
        assert not any(t.endswith(f" on {spike_day}") for t in before), before
        s.sim.clock.advance(timedelta(days=10) - timedelta(hours=1))  # ten idle days, no sync
        assert cli_in_process("sync", env=env).returncode == 0
        titles = [b["title"] for b in _hooks(received)][len(before) :]
        assert any(t.endswith(f" on {spike_day}") for t in titles), titles
        judged = table(
            tmp_path / "warehouse.duckdb",
            "SELECT data_day FROM alert_rule_runs WHERE rule = 'spike' ORDER BY data_day",
        )  # on the platform's clock: the simulator's days, not this machine's
        assert judged == [
            ((start - timedelta(days=1)).date(),),
            ((s.sim.clock.now - timedelta(days=1)).date(),),
        ]


# -- delivery with bounds (8 of the list) ------------------------------------------------------


@pytest.mark.slow
def test_a_hanging_mail_server_and_a_slow_webhook_cannot_hold_a_sync(setup: Setup) -> None:
    import time

    from tests.alerts.receivers import unresponsive

    env, received, http_port, smtp_port = setup
    Path(env["CREDITLENS_CONFIG"]).write_text(
        low_balance(
            env,
            '"hook", "mail"',
            f'\n[[alerts]]\nname = "lower"\nkind = "balance_below"\n'
            f'threshold = {above(env) + 1}\nchannels = ["hook", "mail"]\n',
        )
    )
    with unresponsive() as (slow_http, silent_smtp):
        stuck = {
            **env,
            "CREDITLENS_SYNC_DELIVERY_DEADLINE_S": "4",
            "HOOK_URL": f"json://127.0.0.1:{slow_http}/hook",
            "MAIL_URL": f"mailto://127.0.0.1:{silent_smtp}?from=a@example.com&to=b@example.com",
        }
        began = time.monotonic()
        done = cli_in_process("sync", env=stuck)
        took = time.monotonic() - began
    assert done.returncode == 0, done.stderr
    # The sync's own work takes seconds; delivery added at most its deadline and one send.
    assert took < 60, took
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert warnings, done.stderr
    named = " ".join(warnings)
    assert "HOOK_URL" in named or "MAIL_URL" in named or "deadline" in named
    assert str(slow_http) not in named and str(silent_smtp) not in named  # never the URL
    warehouse = Path(env["CREDITLENS_WAREHOUSE"])
    rows = table(warehouse, "SELECT status, attempts, last_error FROM message_outbox")
    assert rows and all(status == "pending" for status, _, _ in rows)  # nothing lost
    assert all(attempts <= 1 for _, attempts, _ in rows)  # a refused channel: tried once
    # The services answer again: once the backoff is over, each message arrives once.
    from pipelines.config.alerting import alerting
    from pipelines.notify.delivery import deliver

    healthy = {**env, **channel_urls(http_port, smtp_port)}
    settings = Settings.from_env(healthy)
    config = alerting(settings, healthy, warehouse.parent)
    later = datetime.now(UTC) + timedelta(minutes=5)
    store = Warehouse(warehouse, lock_timeout_s=5.0)
    sent = deliver(store, config, healthy, now=later).sent
    assert len(sent) == len(rows) == 4
    assert deliver(store, config, healthy, now=later).sent == []  # once
    assert len(_hooks(received)) == 2 and len(received.mail) == 2
    assert table(warehouse, "SELECT DISTINCT status FROM message_outbox") == [("sent",)]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "HOOK_URL is not set"),
        ("nonsense://x", "HOOK_URL: it holds no URL Apprise knows (value not shown)"),
        (
            "json://127.0.0.1:99999/hook",
            "HOOK_URL: its port is not a number from 1 to 65535 (value not shown)",
        ),
        ("json://127.0.0.1:{refused}/hook", "HOOK_URL: the connection was refused"),
        ("json://127.0.0.1:{failing}/hook", "HOOK_URL: the service answered HTTP 500"),
    ],
)
def test_every_channel_error_names_the_variable_and_why(setup: Setup, value: str, why: str) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    from tests.alerts.receivers import free_port

    class Failing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    env = setup[0]
    Path(env["CREDITLENS_CONFIG"]).write_text(low_balance(env, '"hook"'))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = value.format(refused=free_port(), failing=server.server_address[1])
        done = cli_in_process("alerts", "check", env={**env, "HOOK_URL": url})
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("creditlens: warning: alerts: channel hook: 1 message not delivered (")
    assert why in line, line
    assert not url or url not in line


# -- docs/alerts.md's walkthrough, as written (9 of the list) ----------------------------------


def walkthrough_start(now: datetime) -> datetime:
    """docs/alerts.md's walkthrough starts the clock three days back, or a week back from the
    1st to the 4th of a month: burnco's plan grants its monthly credits on the 1st, and two days
    that hold a grant lift the balance instead of spending it down."""
    return now - timedelta(days=7 if now.day <= 4 else 3)


def test_the_walkthrough_never_spans_a_monthly_grant() -> None:
    """Its two days end before the 1st or begin a day after it, on every day of a year."""
    for hour in (0, 12, 23):
        day = datetime(2026, 1, 1, hour, 30, tzinfo=UTC)
        while day.year == 2026:
            start = walkthrough_start(day)
            first = (start + timedelta(days=2)).replace(day=1, hour=0, minute=0)
            assert not start - timedelta(days=1) < first <= start + timedelta(days=2), day
            day += timedelta(days=1)


@pytest.mark.slow
def test_the_walkthrough_burn_alert_top_up_recover(
    tmp_path: Path, servers: tuple[Received, int, int]
) -> None:
    import httpx

    received, http_port, smtp_port = servers
    received.clear()
    with serving("alerts", now=walkthrough_start(datetime.now(UTC))) as s:
        burnco = next(c for c in s.sim.companies if c.name == "burnco")
        config = tmp_path / "creditlens.toml"
        config.write_text(
            f'[[accounts]]\nname = "burnco"\nbase_url = "{s.url}"\napi_key_env = "BURNCO_KEY"\n'
            + CHANNELS
        )
        env = {
            "CREDITLENS_CONFIG": str(config),
            "CREDITLENS_WAREHOUSE": str(tmp_path / "creditlens.duckdb"),
            "CREDITLENS_REPORTS_DIR": str(tmp_path / "creditlens-reports"),
            "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
            "BURNCO_KEY": next(k.secret for k in burnco.keys if k.label == "primary"),
            **channel_urls(http_port, smtp_port),
        }
        assert cli_in_process("sync", env=env).returncode == 0
        ((balance,),) = table(
            tmp_path / "creditlens.analyst.duckdb",
            "SELECT balance FROM consumption_snapshots ORDER BY fetched_at DESC LIMIT 1",
        )
        threshold = int(balance) - 100  # docs/alerts.md: any two days of spend cross it
        config.write_text(
            config.read_text() + f'\n[[alerts]]\nname = "low-balance"\nkind = "balance_below"\n'
            f'threshold = {threshold}\nchannels = ["hook"]\n'
        )
        quiet = cli_in_process("sync", env=env)
        assert quiet.returncode == 0 and "alert" not in quiet.stdout and _hooks(received) == []
        with httpx.Client(base_url=s.url) as sim:
            moved = sim.post("/_simulator/clock", params={"hours": 48})
            assert moved.status_code == 200, moved.text
            fired = cli_in_process("sync", env=env)
            assert "alert firing: low-balance on burnco" in fired.stdout, fired.stdout
            (message,) = _hooks(received)
            need = re.search(r"\*\*Next:\*\* top up at least ([\d,.]+) credits", message["message"])
            assert need, message["message"]
            amount = Decimal(need[1].replace(",", ""))
            topped = sim.post("/_simulator/top-up", params={"company": "burnco", "amount": amount})
            assert topped.status_code == 200, topped.text
        received.clear()
        recovered = cli_in_process("sync", env=env)
        assert "alert recovered: low-balance on burnco" in recovered.stdout, recovered.stdout
        (message,) = _hooks(received)
        assert message["type"] == "success"
        assert "**Next:** nothing: the balance is back above the threshold" in message["message"]
        assert _alerts(env) == ["no open alerts"]


def test_a_long_batch_keeps_its_claims_by_renewing_their_lease(setup: Setup) -> None:
    from pipelines.warehouse.outbox import claim, renew

    env = setup[0]
    Path(env["CREDITLENS_CONFIG"]).write_text(low_balance(env, '"hook"'))
    settings = Settings.from_env(env)
    assert cli_in_process("alerts", "check", env={**env, "HOOK_URL": ""}).returncode == 0
    path, lease = settings.warehouse, timedelta(minutes=10)
    now = datetime.now(UTC) + timedelta(hours=2)  # past the backoff of the refused send
    rows = claim(path, 5.0, now, lease, "long:1").rows
    assert len(rows) == 1
    renew(path, 5.0, rows, "long:1", now + timedelta(minutes=8))  # halfway through its batch
    assert claim(path, 5.0, now + timedelta(minutes=11), lease, "other:2").rows == []
    taken = claim(path, 5.0, now + timedelta(minutes=19), lease, "other:2").rows
    assert [r.resend for r in taken] == [True]  # once the renewed lease runs out too


def test_a_channel_that_refused_is_not_tried_again_in_the_same_run(setup: Setup) -> None:
    from tests.alerts.receivers import free_port

    env = setup[0]
    Path(env["CREDITLENS_CONFIG"]).write_text(
        low_balance(
            env,
            '"hook"',
            f'\n[[alerts]]\nname = "lower"\nkind = "balance_below"\n'
            f'threshold = {above(env) + 1}\nchannels = ["hook"]\n',
        )
    )
    dead = {**env, "HOOK_URL": f"json://127.0.0.1:{free_port()}/hook"}
    done = cli_in_process("alerts", "check", env=dead)
    assert done.returncode == 0
    (line,) = done.stderr.strip().splitlines()  # one line for the channel, both messages
    assert "channel hook: 2 messages not delivered (HOOK_URL: the connection was refused)" in line
    errors = sorted(
        e
        for (e,) in table(
            Path(env["CREDITLENS_WAREHOUSE"]), "SELECT last_error FROM message_outbox"
        )
    )
    assert errors[0] == "HOOK_URL: the connection was refused"
    assert errors[1] == "not tried: HOOK_URL: the connection was refused, earlier in this run"
