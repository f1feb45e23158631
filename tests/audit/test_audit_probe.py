"""Probing real keys against the real simulator over loopback: every classification."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.api.errors import ConfigurationError
from pipelines.audit import KeyStatus, Outcome, Severity, exit_code, run_audit, to_json
from pipelines.audit.report import KeyResult
from simulator import Fault, Scenario, ServerHandle, Simulator, serve
from tests.audit.audit_helpers import SECRET, key_block, write_inventory

UNKNOWN_TO_SERVER = "sk_sim_0000000000000000000000000000000000000000"


def outcomes(key: KeyResult) -> dict[str, str]:
    return {e.endpoint: e.outcome.value for e in key.endpoints}


def test_every_key_is_classified(tmp_path: Path, sim: Simulator, server: ServerHandle) -> None:
    env = {
        "SYNC": sim.key_for("acme"),
        "WIDGET": sim.key_for("acme"),
        "CRM": sim.key_for("acme", "campaigns"),
        "OLD": sim.key_for("acme", "full", revoked=True),
        "GHOST": UNKNOWN_TO_SERVER,
    }
    inventory = write_inventory(
        tmp_path,
        key_block("sync", "SYNC", "full", ("creditlens sync", "server")),
        key_block("widget", "WIDGET", "campaigns", ("web/widget.js", "client-side")),
        key_block("crm", "CRM", "campaigns", ("Acme CRM", "vendor")),
        key_block("old", "OLD", "full", ("billing-service", "server")),
        key_block("ghost", "GHOST", "campaigns"),
    )
    report = run_audit(inventory, base_url=server.url, secret=SECRET, env=env)
    by = {k.name: k for k in report.keys}

    assert by["sync"].status is KeyStatus.ACTIVE and by["sync"].severity is Severity.NONE
    assert set(outcomes(by["sync"]).values()) == {"readable"}  # the ledger params were right

    widget = by["widget"]
    assert widget.status is KeyStatus.ACTIVE and widget.billing_exposed
    assert widget.exposure == ("consumption", "breakdown", "subscription", "transactions")
    assert widget.severity is Severity.CRITICAL
    assert {f.rule_id for f in widget.findings} == {"CLA001", "CLA002"}
    assert widget.fingerprint == by["sync"].fingerprint  # same key, same id

    crm = by["crm"]
    assert crm.status is KeyStatus.ACTIVE and not crm.billing_exposed
    assert outcomes(crm) == {
        "campaign": "readable",
        "consumption": "forbidden",
        "breakdown": "forbidden",
        "subscription": "forbidden",
        "transactions": "forbidden",
    }
    assert crm.severity is Severity.NONE

    for name in ("old", "ghost"):
        assert by[name].status is KeyStatus.REJECTED
        assert set(outcomes(by[name]).values()) == {"rejected"}
        assert [f.rule_id for f in by[name].findings] == ["CLA004"]

    assert exit_code(report, "critical") == 1
    rows = {r["key_name"]: r for r in report.rows()}
    assert rows["crm"]["endpoints_forbidden"] == [
        "consumption",
        "breakdown",
        "subscription",
        "transactions",
    ]


def audit_one(
    tmp_path: Path, url: str, key: str, scope: str = "campaigns", **overrides: object
) -> KeyResult:
    inventory = write_inventory(tmp_path, key_block("k", "K", scope, ("svc", "server")))
    report = run_audit(
        inventory,
        base_url=url,
        secret=SECRET,
        env={"K": key},
        api_settings_overrides=overrides,
    )
    assert key not in to_json(report)
    (result,) = report.keys
    return result


def test_a_timeout_is_unknown_never_rejected(
    tmp_path: Path, sim: Simulator, server: ServerHandle
) -> None:
    sim.faults.script(Fault("timeout", path="/Campaign", delay=3.0))
    result = audit_one(tmp_path, server.url, sim.key_for("acme", revoked=True), timeout_s=0.3)
    assert result.status is KeyStatus.UNKNOWN
    campaign = result.endpoints[0]
    assert campaign.outcome is Outcome.UNKNOWN and "timed out" in campaign.reason
    assert [e.outcome for e in result.endpoints[1:]] == [Outcome.REJECTED] * 4
    assert [f.rule_id for f in result.findings] == ["CLA005"]


def test_a_rate_limit_is_unknown_and_leaves_the_rest_judged(
    tmp_path: Path, sim: Simulator, server: ServerHandle
) -> None:
    sim.faults.script(Fault("429", path="/Consumption/transactions", retry_after=30))
    result = audit_one(tmp_path, server.url, sim.key_for("acme"))
    assert result.status is KeyStatus.ACTIVE
    transactions = result.endpoints[-1]
    assert transactions.outcome is Outcome.UNKNOWN and transactions.http_status == 429
    assert result.exposure == ("consumption", "breakdown", "subscription")
    assert {f.rule_id: f.severity for f in result.findings} == {
        "CLA001": Severity.HIGH,
        "CLA005": Severity.LOW,
    }


def test_a_rate_limited_revoked_key_is_unknown(
    tmp_path: Path, sim: Simulator, server: ServerHandle
) -> None:
    sim.faults.script(Fault("429", path="/Consumption"))
    result = audit_one(tmp_path, server.url, sim.key_for("acme", revoked=True))
    assert result.status is KeyStatus.UNKNOWN


@pytest.mark.parametrize("bad", ["truncated", "html"])
def test_a_2xx_that_is_not_json_is_unknown(
    tmp_path: Path, sim: Simulator, server: ServerHandle, bad: str
) -> None:
    if bad == "html":  # a proxy's login page answering 200
        sim.faults.respond(
            b"<html>sign in</html>", 200, content_type="text/html", path="/Subscription", times=1
        )
    else:
        sim.faults.script(Fault("truncated", path="/Subscription"))
    result = audit_one(tmp_path, server.url, sim.key_for("acme"), scope="full")
    subscription = result.endpoints[3]
    assert subscription.endpoint == "subscription"
    assert subscription.outcome is Outcome.UNKNOWN and "not JSON" in subscription.reason
    assert result.status is KeyStatus.ACTIVE


def test_nothing_listening_is_unknown(tmp_path: Path, sim: Simulator) -> None:
    result = audit_one(tmp_path, "http://127.0.0.1:9", sim.key_for("acme"), timeout_s=0.5)
    assert result.status is KeyStatus.UNKNOWN
    assert {e.outcome for e in result.endpoints} == {Outcome.UNKNOWN}


def test_a_server_echoing_the_key_cannot_make_the_audit_print_it(
    tmp_path: Path, sim: Simulator, server: ServerHandle
) -> None:
    key = sim.key_for("acme", "campaigns")
    body = {"title": "Internal Server Error", "status": 500, "detail": f"bad key {key}"}
    sim.faults.respond(body, 500, path="/Campaign", times=1)
    result = audit_one(tmp_path, server.url, key)
    assert "[redacted]" in result.endpoints[0].reason
    assert key not in repr(result)


def test_range_parameters_follow_the_settings(tmp_path: Path) -> None:
    scenario = Scenario.named("datetime_range", companies=[{"name": "acme", "history_days": 3}])
    other = Simulator(scenario)
    with serve(other) as handle:
        key = other.key_for("acme")
        tuned = audit_one(
            tmp_path,
            handle.url,
            key,
            scope="full",
            range_start_param="from",
            range_end_param="to",
            range_format="datetime",
        )
        assert tuned.endpoints[-1].outcome is Outcome.READABLE
        default = audit_one(tmp_path, handle.url, key, scope="full")
        transactions = default.endpoints[-1]
        # A 400 for our own parameters says nothing about the key.
        assert transactions.outcome is Outcome.UNKNOWN and transactions.http_status == 400


def test_a_key_that_cannot_be_read_is_reported_not_probed(
    tmp_path: Path, server: ServerHandle
) -> None:
    inventory = write_inventory(tmp_path, key_block("k", "MISSING", "campaigns", ("svc", "server")))
    report = run_audit(inventory, base_url=server.url, secret=SECRET, env={})
    (key,) = report.keys
    assert key.status is KeyStatus.UNKNOWN and key.fingerprint is None
    assert [f.rule_id for f in key.findings] == ["CLA006"]
    assert "MISSING is not set" in key.findings[0].message
    assert {e.outcome for e in key.endpoints} == {Outcome.UNKNOWN}
    assert report.rows()[0]["fingerprint"] is None


def test_bad_settings_stop_the_run_before_any_request(tmp_path: Path, server: ServerHandle) -> None:
    inventory = write_inventory(tmp_path, key_block("k", "K", "campaigns"))
    for overrides in ({"timeout_s": -1}, {"api_key": "x"}):
        with pytest.raises(ConfigurationError):
            run_audit(
                inventory,
                base_url=server.url,
                secret=SECRET,
                env={"K": "k"},
                api_settings_overrides=overrides,
            )
    with pytest.raises(ConfigurationError, match="no base URL"):
        run_audit(inventory, secret=SECRET, env={"K": "k"})
