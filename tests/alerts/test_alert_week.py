"""An agency's week, as on-call lives it: the features together, day by day.

Three companies in one accounts file, synced once a simulated day for a week, with real channels
(a json:// receiver, a Mattermost-format webhook, aiosmtpd) and the product's default persistent
Dagster instance:

- onboardco is onboarded with a key the platform rejects: its ``sync_failed`` fires at once, and
  recovers once the key is fixed;
- burnco burns toward its threshold: fired, acknowledged, topped up as the message says
  (recovered), and fired again as it keeps burning;
- spikeco's agent spends twenty times its usual on a day, then the account goes silent: the day is
  judged once it is over, although nothing follows it.

On-call receives exactly the messages a person would expect, once each, and at every step
`creditlens alerts list` and the Dagster checks name the same open alerts.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterInstance

from pipelines.alerts.definitions import rule_check
from pipelines.config.alert_rules import Rule
from pipelines.orchestration.metadata import records_of
from simulator.scenario import CompanySpec, Scenario, SpendSpikeSpec, TopUpSpec
from tests.alerts.helpers import CHANNELS, channel_urls
from tests.alerts.receivers import Received
from tests.conftest import serving
from tests.pipeline.helpers import cli_in_process, table

WEEK = Scenario(
    name="week",
    companies=[
        CompanySpec(name="onboardco", history_days=60, entries_per_day=30, agents=2, campaigns=2),
        # No plan grant (a suspended subscription): a 1st inside the week would refill it.
        CompanySpec(
            name="burnco", history_days=70, entries_per_day=200, agents=3, campaigns=2,
            plan="Starter", status="Suspended", auto_top_up=False,
            top_ups=[TopUpSpec(days_ago=69, amount=Decimal(20000))],
        ),
        CompanySpec(
            name="spikeco", history_days=90, entries_per_day=40, agents=2, campaigns=2,
            spend_spikes=[SpendSpikeSpec(days_ago=-3, factor=20.0, agent=1)],
            quiet_days=[(-4, -7)],
        ),
    ],
)  # fmt: skip

AGENCY = """
[[accounts]]
name = "onboardco"
base_url = "{url}"
api_key_env = "ONBOARDCO_KEY"

[[accounts]]
name = "burnco"
base_url = "{url}"
api_key_env = "BURNCO_KEY"

[[accounts]]
name = "spikeco"
base_url = "{url}"
api_key_env = "SPIKECO_KEY"

{channels}
[[alerts]]
name = "failed"
kind = "sync_failed"
channels = ["hook", "mail"]

[[alerts]]
name = "low"
kind = "balance_below"
threshold = {threshold}
recover_margin = 0.01
accounts = ["burnco"]
channels = ["hook", "chat"]

[[alerts]]
name = "spike"
kind = "spend_anomaly"
dimension = "agent"
min_credits = 0.5
accounts = ["spikeco"]
channels = ["hook"]
"""


def _open_alerts(env: dict[str, str]) -> set[str]:
    done = cli_in_process("alerts", "list", env=env)
    assert done.returncode == 0, done.stderr
    return {line.split()[0] for line in done.stdout.splitlines() if line.startswith("al-")}


CHECKS = [("failed", "onboardco"), ("failed", "burnco"), ("failed", "spikeco"),
          ("low", "burnco"), ("spike", "spikeco")]  # fmt: skip


def _failing_checks(env: dict[str, str]) -> set[str]:
    """The alert ids the Dagster checks fail on, as the UI and an alert policy see them."""
    ids: set[str] = set()
    with DagsterInstance.from_config(env["DAGSTER_HOME"]) as dagster_instance:
        for rule, account in CHECKS:
            name = rule_check(Rule(rule, "sync_failed"))
            key = AssetCheckKey(AssetKey("alerts"), name)
            record = dagster_instance.get_latest_asset_check_evaluation_record(key)
            assert record is not None and record.evaluation is not None, name
            metadata = {k: v.value for k, v in record.evaluation.metadata.items()}
            (verdict,) = [r for r in records_of(metadata) if r["account"] == account]
            if not verdict["passed"]:
                ids |= set(verdict["alert_ids"])
    return ids


@pytest.mark.slow
def test_an_agency_week_on_call(tmp_path: Path, servers: tuple[Received, int, int]) -> None:
    received, http_port, smtp_port = servers
    received.clear()
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=7)
    with serving(WEEK, now=start) as s:
        keys = {
            c.name: next(k.secret for k in c.keys if k.label == "primary") for c in s.sim.companies
        }
        burnco = s.sim.truth("burnco").balance
        config = tmp_path / "agency.toml"
        config.write_text(AGENCY.format(url=s.url, threshold=int(burnco) - 250, channels=CHANNELS))
        env = {
            "CREDITLENS_CONFIG": str(config),
            "CREDITLENS_WAREHOUSE": str(tmp_path / "warehouse.duckdb"),
            "CREDITLENS_REPORTS_DIR": str(tmp_path / "reports"),
            "DAGSTER_HOME": str(tmp_path / "dagster"),
            "CREDITLENS_ANOMALY_GRACE_HOURS": "0",
            "CREDITLENS_LOOKBACK_DAYS": "8",  # the first sync read ahead of the simulator's now
            "ONBOARDCO_KEY": "sk_rejected_by_the_platform_00000000",
            "BURNCO_KEY": keys["burnco"],
            "SPIKECO_KEY": keys["spikeco"],
            **channel_urls(http_port, smtp_port),
        }
        (tmp_path / "dagster").mkdir()
        sent: list[tuple[str, str]] = []  # (title, type) of every hook message, in order
        acked = topped = False
        for day in range(7):
            if day:
                s.sim.clock.advance(timedelta(days=1))
            if day == 2:
                env["ONBOARDCO_KEY"] = keys["onboardco"]  # the agency fixed the key
            done = cli_in_process("sync", env=env)
            assert done.returncode == (1 if day < 2 else 0), (day, done.stderr[-1500:])
            hooks = [b for path, b in received.http if path.endswith("/hook")]
            fresh = hooks[len(sent) :]
            sent += [(b["title"], b["type"]) for b in fresh]
            low = [b for b in fresh if b["title"] == "creditlens ERROR: low on burnco"]
            if low and not acked:  # on-call reads it, and acknowledges this crossing
                alert_id = re.search(r"creditlens alert (al-[0-9a-f]+)/", low[0]["message"])
                assert alert_id
                ack = cli_in_process("alerts", "ack", alert_id[1], "--reason", "ordered", env=env)
                assert ack.returncode == 0 and "silent until it recovers" in ack.stdout
                need = re.search(r"top up at least ([\d,.]+) credits", low[0]["message"])
                assert need
                s.sim.top_up_now("burnco", Decimal(need[1].replace(",", "")))
                acked = topped = True
                again = cli_in_process("sync", env=env)  # the top-up, read at once
                assert again.returncode == 0
                hooks = [b for path, b in received.http if path.endswith("/hook")]
                sent += [(b["title"], b["type"]) for b in hooks[len(sent) :]]
            assert _open_alerts(env) == _failing_checks(env), day  # one story, every day
        assert topped
    counted = Counter(sent)
    assert counted == Counter(
        {
            ("creditlens ERROR: failed on onboardco", "failure"): 1,
            ("creditlens recovered: failed on onboardco", "success"): 1,
            ("creditlens ERROR: low on burnco", "failure"): 2,
            ("creditlens recovered: low on burnco", "success"): 1,
            **{(t, "warning"): 1 for t, _ in sent if t.startswith("creditlens WARN: spike on")},
        }
    ), sent
    spikes = [title for title, _ in sent if title.startswith("creditlens WARN: spike on spikeco")]
    spike_day = (start + timedelta(days=3)).date()
    assert spikes and all(title.endswith(f"on {spike_day}") for title in spikes), spikes
    order = [title for title, _ in sent if "burnco" in title]
    assert order == [
        "creditlens ERROR: low on burnco",
        "creditlens recovered: low on burnco",
        "creditlens ERROR: low on burnco",
    ]
    mails = [m for m in received.mail if "onboardco" in m]
    assert len(mails) == 2  # the failure and its recovery, by e-mail too
    waiting = "SELECT * FROM message_outbox WHERE status <> 'sent'"
    assert not table(tmp_path / "warehouse.duckdb", waiting)
