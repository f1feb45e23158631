"""The Dagster code location: every domain's definitions, merged, and the shared resources.

Each domain (ledger, snapshots, reconciliation, reports, audit) declares its own assets, checks,
jobs, schedules and resources in its ``definitions.py``; this module lists the domains, adds what
spans them (the automation that makes the refresh follow the ledger) and describes every asset
the same way (owners, the column schema of its warehouse table:
pipelines/orchestration/metadata.py). ``dagster dev -w workspace.yaml`` loads ``defs``;
``creditlens sync`` runs the same definitions in-process, so the CLI and the UI cannot drift apart.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from dagster import BetaWarning, Definitions, PreviewWarning

from pipelines.alerts import definitions as alerts
from pipelines.audit import definitions as audit
from pipelines.config.settings import Settings
from pipelines.ledger import definitions as ledger
from pipelines.orchestration.automation import automation_sensor
from pipelines.orchestration.metadata import described
from pipelines.reconciliation import definitions as reconciliation
from pipelines.reports import definitions as reports
from pipelines.resources import shared_resources
from pipelines.snapshots import definitions as snapshots
from pipelines.statements import definitions as statements

# BackfillPolicy is "beta" in Dagster 1.13; the single-run policy is what the ledger needs.
warnings.filterwarnings("ignore", category=BetaWarning)

DOMAINS: tuple[Callable[[Settings], Definitions], ...] = (
    ledger.build_definitions,
    snapshots.build_definitions,
    reconciliation.build_definitions,
    reports.build_definitions,
    audit.build_definitions,
    alerts.build_definitions,
    statements.build_definitions,
)


def build_definitions(settings: Settings | None = None) -> Definitions:
    settings = settings or Settings.from_env()
    merged = Definitions.merge(
        Definitions(resources=shared_resources(settings), sensors=[automation_sensor]),
        *(build(settings) for build in DOMAINS),
    )
    # "Preview" in Dagster 1.13; it only rewrites the specs (owners, metadata), keys unchanged.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviewWarning)
        return merged.map_asset_specs(func=described(settings))


defs = build_definitions()
