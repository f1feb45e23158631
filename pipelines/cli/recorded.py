"""What a CLI command did outside a Dagster run, recorded in the instance the UI reads.

Some of the CLI's work is an asset's, done without running the asset: history discovery (in
`creditlens sync`, before the ledger's run), the whole report site (`creditlens report`) and the
key audit landed in the warehouse (`creditlens audit`). Unrecorded, the catalog said "Never
materialized" for ``ledger_history``, ``reports`` and ``key_audit`` although the work was done.
Each is reported as Dagster reports work done outside its runs, a runless materialization
(``DagsterInstance.report_runless_asset_event``), with the metadata the asset itself records and
tags naming the command. An ephemeral instance (CREDITLENS_DAGSTER_INSTANCE=ephemeral) keeps
nothing, so nothing is recorded. The work is done when this runs: a record that cannot be
written is one warning line on stderr, never a failed command.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dagster import AssetCheckEvaluation, AssetKey, AssetMaterialization

from pipelines.alerts.definitions import ASSET as ALERTS_ASSET
from pipelines.alerts.definitions import Verdict
from pipelines.audit.assets import audit_metadata
from pipelines.audit.report import AuditReport
from pipelines.config.settings import Settings
from pipelines.dagster_home.home import home_for
from pipelines.dagster_home.instance import instance
from pipelines.ledger.history_asset import discovery_metadata
from pipelines.ledger.history_search import History
from pipelines.orchestration.automation import CLI_RUN_TAG
from pipelines.reports.assets import site_metadata
from pipelines.statements.assets import materializations
from pipelines.statements.delivery import CheckOutcome

if TYPE_CHECKING:  # the site's modules load only when a report is built
    from dashboards.site import SiteResult
from pipelines.warehouse.row_counts import table_rows

COMMAND_TAG = "creditlens/command"


def record_materialization(
    settings: Settings,
    asset: str,
    metadata: Mapping[str, Any],
    command: str,
    checks: Sequence[Verdict] = (),
) -> bool:
    """Reports that ``command`` materialized ``asset`` (and evaluated its ``checks``); whether
    it was recorded."""
    event = AssetMaterialization(
        asset_key=AssetKey(asset),
        description=f"by creditlens {command}",
        metadata=dict(metadata),
        tags=_tags(command),
    )
    evaluations = [
        AssetCheckEvaluation(
            asset_key=AssetKey(asset), check_name=check.name, passed=check.passed,
            severity=check.severity, metadata=dict(check.metadata),
            description=f"by creditlens {command}",
        )
        for check in checks
    ]  # fmt: skip
    return _report(settings, asset, [event, *evaluations])


def _tags(command: str) -> dict[str, str]:
    return {CLI_RUN_TAG: "true", COMMAND_TAG: command.replace(" ", "-")}


def _report(
    settings: Settings,
    asset: str,
    events: Sequence[AssetMaterialization | AssetCheckEvaluation],
) -> bool:
    """Reports ``events`` to the instance; whether they were recorded. The work is done when
    this runs: a record that cannot be written is one warning line, never a failed command."""
    if not events or home_for(settings) is None:
        return False
    try:
        dagster_instance = instance(settings)
        try:
            for event in events:
                dagster_instance.report_runless_asset_event(event)
        finally:
            dagster_instance.dispose()
    except Exception as exc:  # the work is done; only its record in Dagster is missing
        line = " ".join(str(exc).split()) or type(exc).__name__
        print(
            f"creditlens: warning: {asset} not recorded in the Dagster instance: {line}",
            file=sys.stderr,
        )
        return False
    return True


def record_discovery(settings: Settings, found: Sequence[History], tried: int) -> bool:
    """``ledger_history``, after `creditlens sync` discovered and recorded these histories."""
    if home_for(settings) is None:
        return False
    rows = table_rows(
        settings.warehouse, ["ledger_history"], lock_timeout_s=settings.lock_timeout_s
    ).get("ledger_history", 0)
    return record_materialization(
        settings, "ledger_history", discovery_metadata(found, tried, rows), "sync"
    )


def record_site(settings: Settings, site: SiteResult) -> bool:
    """``reports``, after `creditlens report` built the whole site where the asset builds it."""
    return record_materialization(settings, "reports", site_metadata(site), "report")


def record_audit(settings: Settings, report: AuditReport) -> bool:
    """``key_audit``, after `creditlens audit` landed its report in the warehouse."""
    if home_for(settings) is None:
        return False
    rows = table_rows(
        settings.warehouse, ["key_audit"], lock_timeout_s=settings.lock_timeout_s
    ).get("key_audit", 0)
    return record_materialization(settings, "key_audit", audit_metadata(report, rows), "audit")


def record_alerts(
    settings: Settings, metadata: Mapping[str, Any], checks: Sequence[Verdict], command: str
) -> bool:
    """``alerts`` and its checks, after `creditlens sync` or `creditlens alerts check` evaluated
    and delivered them as the asset does: the UI shows the same pass the CLI ran."""
    return record_materialization(settings, ALERTS_ASSET, metadata, command, checks)


def record_closes(settings: Settings, outcome: CheckOutcome, command: str) -> bool:
    """``statement_closes``, one materialization per month partition the check closed or
    restated (its figures and versions as metadata), as the close job records them in a run:
    the partitions show every close, whichever ran it."""
    events = [
        AssetMaterialization(
            asset_key=event.asset_key, partition=event.partition, metadata=event.metadata,
            description=f"by creditlens {command}", tags=_tags(command),
        )
        for event in materializations(outcome)
    ]  # fmt: skip
    return _report(settings, "statement_closes", events)
