"""The Dagster code location: every domain's definitions, merged, and the shared resources.

Each domain (ledger, snapshots, reconciliation, reports, audit) declares its own assets, checks,
jobs, schedules and resources in its ``definitions.py``; this module only lists the domains.
``dagster dev -w workspace.yaml`` loads ``defs``; ``creditlens sync`` runs the same definitions
in-process, so the CLI and the UI cannot drift apart.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from dagster import BetaWarning, Definitions

from pipelines.audit import definitions as audit
from pipelines.ledger import definitions as ledger
from pipelines.reconciliation import definitions as reconciliation
from pipelines.reports import definitions as reports
from pipelines.resources import shared_resources
from pipelines.settings import Settings
from pipelines.snapshots import definitions as snapshots

# BackfillPolicy is "beta" in Dagster 1.13; the single-run policy is what the ledger needs.
warnings.filterwarnings("ignore", category=BetaWarning)

DOMAINS: tuple[Callable[[Settings], Definitions], ...] = (
    ledger.build_definitions,
    snapshots.build_definitions,
    reconciliation.build_definitions,
    reports.build_definitions,
    audit.build_definitions,
)


def build_definitions(settings: Settings | None = None) -> Definitions:
    settings = settings or Settings.from_env()
    return Definitions.merge(
        Definitions(resources=shared_resources(settings)),
        *(build(settings) for build in DOMAINS),
    )


defs = build_definitions()
