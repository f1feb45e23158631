"""Alerts in Dagster: the ``alerts`` asset (the view) with one check per rule, each account's
verdict its own record in it; its job ``alert_delivery`` in the ``warehouse`` pool, started by
a run-status sensor after each reconciliation and by an hourly schedule (``stale`` must fire
when no sync runs).

The sensor only requests the run: evaluating and sending belong in a run, which has the pool
and no time limit. Runs of the CLI (tagged ``CLI_RUN_TAG``) are not followed: the CLI delivers
after its own sync, so nothing is sent twice. A check is ERROR for balance, runway and failed
syncs, WARN for budgets, anomalies, findings and staleness; none blocks (an alert is news, not
a reason to hold back the reports).
"""

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetSelection,
    DagsterRun,
    DagsterRunStatus,
    DefaultSensorStatus,
    Definitions,
    MaterializeResult,
    RunRequest,
    RunStatusSensorContext,
    SkipReason,
    asset,
    define_asset_job,
    run_status_sensor,
)

from pipelines.alerts.checking import CheckResult, check_rules, judging
from pipelines.alerts.observe import ERROR_KINDS
from pipelines.config.alert_rules import Alerting, Rule
from pipelines.config.alerting import alerting
from pipelines.config.settings import Settings
from pipelines.notify.delivery import Delivery, bounds, deliver
from pipelines.orchestration.account_work import account_slug
from pipelines.orchestration.automation import request_after_reconciliation
from pipelines.orchestration.metadata import account_records
from pipelines.orchestration.schedules import utc_schedule
from pipelines.resources.warehouse import WAREHOUSE_POOL, WarehouseResource
from pipelines.warehouse.alert_read import read_alerts

ASSET = "alerts"
JOB = "alert_delivery"


def rule_check(rule: Rule) -> str:
    """The rule's check: one for all its accounts (docs/scale-out.md, "One event per step, not
    per company"); each account's verdict is its own record in the check's metadata."""
    return f"alert_{account_slug(rule.name)}"


def _specs(config: Alerting, settings: Settings) -> list[tuple[Rule, list[str], AssetCheckSpec]]:
    specs = []
    for rule in config.rules:
        accounts = [a.name for a in settings.accounts if rule.applies_to(a.name)]
        if accounts:
            spec = AssetCheckSpec(
                rule_check(rule),
                asset=ASSET,
                blocking=False,
                description=f"Alert rule {rule.name} ({rule.kind}): fails while an alert of it is "
                "firing and not acknowledged, for any of its accounts.",
            )
            specs.append((rule, accounts, spec))
    return specs


def build_definitions(settings: Settings) -> Definitions:
    config = alerting(settings)
    if not config.rules:
        return Definitions()
    specs = _specs(config, settings)

    @asset(
        name=ASSET,
        group_name="alerts",
        pool=WAREHOUSE_POOL,
        check_specs=[spec for _, _, spec in specs],
        description="Alerts evaluated and delivered: the alerts view, with one check per rule.",
    )
    def alerts(
        context: AssetExecutionContext, warehouse: WarehouseResource
    ) -> Iterator[MaterializeResult | AssetCheckResult]:
        with warehouse.step(context, "alerts"):
            store = warehouse.warehouse()
            names = [a.name for a in settings.accounts]
            result = check_rules(store, config, names, judging=judging(settings))
            delivery = deliver(store, config, bounds=bounds(settings, in_sync=False))
            open_alerts = read_alerts(
                store.path, store.lock_timeout_s, everything=False, account=None
            )
            if result.changes or delivery.sent:
                store.publish_analyst_copy()
        for line in [*result.warnings, *delivery.warnings]:
            context.log.warning(line)
        yield MaterializeResult(metadata=materialization_metadata(result, delivery))
        for verdict in verdicts(config, settings, result, open_alerts):
            yield AssetCheckResult(
                check_name=verdict.name,
                passed=verdict.passed,
                severity=verdict.severity,
                metadata=verdict.metadata,
            )

    job = define_asset_job(
        JOB, selection=AssetSelection.assets(ASSET), description="Evaluate and deliver alerts."
    )

    @run_status_sensor(
        name="alerts_after_reconciliation",
        run_status=DagsterRunStatus.SUCCESS,
        request_job=job,
        default_status=DefaultSensorStatus.RUNNING,
        description="Requests alert delivery after each reconciliation not run by the CLI.",
    )
    def after_reconciliation(context: RunStatusSensorContext) -> RunRequest | SkipReason:
        return delivery_request(context.dagster_run)

    schedule = utc_schedule(
        "alert_check", job, "17 * * * *", "Hourly at :17 UTC: alerts evaluated without a sync."
    )
    return Definitions(assets=[alerts], jobs=[job], sensors=[after_reconciliation],
                       schedules=[schedule])  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    """One rule's check after an evaluation: what the asset yields in a run,
    and what the CLI records in the instance after its own evaluation (pipelines/cli/recorded.py),
    so the UI tells the same story whichever ran it."""

    name: str
    passed: bool
    severity: AssetCheckSeverity
    metadata: dict[str, Any]


def materialization_metadata(result: CheckResult, delivery: Delivery) -> dict[str, int]:
    return {"changes": len(result.changes), "delivered": len(delivery.sent)}


def verdicts(
    config: Alerting,
    settings: Settings,
    result: CheckResult,
    open_alerts: Sequence[Mapping[str, Any]],
) -> list[Verdict]:
    """Each rule's check: failing while an alert of it is firing and not acknowledged for any
    account, with the alerts' ids and evidence, and each account's verdict as its own record
    (and the "no verdict" notes)."""
    out = []
    for rule, accounts, spec in _specs(config, settings):
        records: list[dict[str, Any]] = []
        evidence: list[str] = []
        ids: list[str] = []
        for account in accounts:
            firing = [a for a in open_alerts if (a["rule"], a["account"]) == (rule.name, account)]
            prefix = f"alert {rule.name}: account {account}:"
            notes = [n for n in result.notes if n.startswith(prefix)]
            records.append({
                "account": account, "passed": not firing, "firing": len(firing),
                "alert_ids": [a["alert_id"] for a in firing], "notes": notes,
            })  # fmt: skip
            ids += [a["alert_id"] for a in firing]
            evidence += [a["evidence"] for a in firing]
        severity = AssetCheckSeverity.ERROR if rule.kind in ERROR_KINDS else AssetCheckSeverity.WARN
        firing_accounts = [r["account"] for r in records if r["firing"]]
        notes = [n for r in records for n in r["notes"]]
        metadata: dict[str, Any] = {
            "firing": len(ids),
            "accounts_firing": ", ".join(firing_accounts) or "none",
            "alert_ids": ", ".join(ids) or "none",
            "evidence": "\n".join(evidence) or "nothing firing",
            **account_records(records),
        }
        if notes:
            metadata["notes"] = "\n".join(notes)
        out.append(Verdict(spec.name, not ids, severity, metadata))
    return out


def delivery_request(run: DagsterRun) -> RunRequest | SkipReason:
    """A delivery run after a reconciliation, unless the CLI ran it (it delivers itself)."""
    return request_after_reconciliation(
        run, JOB, "alerts", "delivers its own alerts", "a delivery run"
    )
