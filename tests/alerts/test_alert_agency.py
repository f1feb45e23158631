"""An agency of three companies, configured as docs/alerts.md says, receives exactly the messages a
person would expect, once each: burnco's low balance and short runway, spikeco's spiking agent
and its new hidden movement (not its old ones), topupco's low balance and, once its top-up
lands, its recovery; on a Slack-format webhook and by email, delivered by `creditlens sync`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from tests.alerts.receivers import Received, receivers
from tests.conftest import Simulated, serving
from tests.pipeline.helpers import cli_in_process, table

# The simulator's now is the real now, as the platform's is: spikeco's spike (its day "1") is
# yesterday, the last UTC day over, which alerts judge at once here (no grace for late entries).
# topupco is topped up by hand (the simulator's top-up at its now), never in the future.
START = datetime.now(UTC)

AGENCY = """
[[accounts]]
name = "burnco"
base_url = "{url}"
api_key_env = "BURNCO_KEY"

[[accounts]]
name = "spikeco"
base_url = "{url}"
api_key_env = "SPIKECO_KEY"

[[accounts]]
name = "topupco"
base_url = "{url}"
api_key_env = "TOPUPCO_KEY"

[[channels]]
name = "chat"
url_env = "CHAT_URL"

[[channels]]
name = "mail"
url_env = "MAIL_URL"

[[alerts]]
name = "low-balance"
kind = "balance_below"
threshold = 5000
channels = ["chat", "mail"]

[[alerts]]
name = "runway"
kind = "runway_below"
days = 90
channels = ["chat"]

[[alerts]]
name = "agent-spike"
kind = "spend_anomaly"
dimension = "agent"
min_credits = 60
channels = ["chat"]

[[alerts]]
name = "movements"
kind = "hidden_movement"
channels = ["chat"]

[[alerts]]
name = "failed"
kind = "sync_failed"
channels = ["chat"]
"""


@pytest.fixture(scope="module")
def agency(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Simulated, dict[str, str], Received]]:
    folder = tmp_path_factory.mktemp("agency")
    with serving("alerts", now=START) as s, receivers() as (received, http_port, smtp_port):
        (folder / "agency.toml").write_text(AGENCY.format(url=s.url))
        keys = {
            c.name: next(k.secret for k in c.keys if k.scope == "full") for c in s.sim.companies
        }
        env = {
            "CREDITLENS_CONFIG": str(folder / "agency.toml"),
            "CREDITLENS_WAREHOUSE": str(folder / "warehouse.duckdb"),
            "CREDITLENS_REPORTS_DIR": str(folder / "reports"),
            "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
            "CREDITLENS_MAX_RETRIES": "8",
            "CREDITLENS_ANOMALY_GRACE_HOURS": "0",
            **{f"{name.upper()}_KEY": key for name, key in keys.items()},
            "CHAT_URL": f"mmost://127.0.0.1:{http_port}/chattoken",
            "MAIL_URL": f"mailto://127.0.0.1:{smtp_port}?from=alerts@example.com&to=ops@example.com",
        }
        yield s, env, received


def _sent(received: Received) -> list[tuple[str, str]]:
    """(rule, account[, value]) of each chat message, sorted."""
    found = []
    for _, body in received.http:
        match = re.search(r"creditlens \w+: (\S+) on (\S+?)(?:,|\r?\n)", body["text"])
        assert match, body
        found.append((match[1], match[2]))
    return sorted(found)


def test_an_agency_receives_each_alert_once_and_the_recovery(
    agency: tuple[Simulated, dict[str, str], Received],
) -> None:
    s, env, received = agency
    done = cli_in_process("sync", env=env)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    assert "alert firing: low-balance on burnco" in done.stdout  # said where the sync is read
    assert _sent(received) == [
        ("agent-spike", "spikeco"),
        ("low-balance", "burnco"),
        ("low-balance", "topupco"),
        ("movements", "spikeco"),
        ("runway", "burnco"),
    ]
    assert len(received.mail) == 2  # the low balances, by email too
    spike = next(b["text"] for _, b in received.http if "agent-spike" in b["text"])
    assert "same weekday" in spike and "most of it: campaign" in spike  # what contributed
    # spikeco's movement of long ago is recorded as seen at the rule's first evaluation, not sent
    warehouse = Path(env["CREDITLENS_WAREHOUSE"])
    seen = table(warehouse, "SELECT account, state FROM alert_events WHERE rule = 'movements'")
    assert sorted(seen) == [("spikeco", "baseline"), ("spikeco", "firing")]
    assert all(re.search(r"al-[0-9a-f]{12}/1", m) for m in received.mail)
    received.clear()
    assert cli_in_process("alerts", "check", env=env).returncode == 0
    assert received.texts() == []  # nothing changed: nothing sent
    # The spike was a planned campaign: acknowledging an event closes it, and says so.
    found = re.search(r"creditlens alert (al-[0-9a-f]+)/", spike)
    assert found
    closed = cli_in_process("alerts", "ack", found[1], "--reason", "a planned campaign", env=env)
    assert closed.returncode == 0 and "closed, nothing more is sent for it" in closed.stdout
    assert found[1] not in cli_in_process("alerts", "list", env=env).stdout
    again = cli_in_process("alerts", "ack", found[1], "--reason", "twice", env=env)
    assert again.returncode == 1 and "is closed, not firing" in again.stderr

    s.sim.top_up_now("topupco", Decimal(20000))
    assert cli_in_process("sync", env=env).returncode == 0
    assert _sent(received) == [("low-balance", "topupco")]
    assert "recovered" in received.http[0][1]["text"] and len(received.mail) == 1
    states = table(
        warehouse,
        "SELECT account, rule, state FROM alerts WHERE state <> 'baseline' ORDER BY 1, 2",
    )
    assert ("topupco", "low-balance", "recovered") in states
    assert ("burnco", "low-balance", "firing") in states

    received.clear()  # a key the platform refuses: topupco's sync fails, and says so once
    failing = {**env, "TOPUPCO_KEY": "not-a-key-the-platform-knows"}
    assert cli_in_process("sync", env=failing).returncode == 1
    assert _sent(received) == [("failed", "topupco")]
    assert "account topupco" in received.http[0][1]["text"]

    # The site marks spikeco's anomalous day on its agent's chart, and nowhere else.
    from dashboards.site import build_site

    site = build_site(warehouse, warehouse.parent / "site", lock_timeout_s=5.0)
    marked = [p for p in site.pages if "spend anomaly (alert)" in p.read_text()]
    assert len(marked) == 1 and "spikeco" in str(marked[0]) and "agents" in str(marked[0])
