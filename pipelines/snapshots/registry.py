"""Every billing snapshot endpoint, one row each: the fetch, the assets, the jobs and the key
audit all read this table, so adding an endpoint touches this file (and its row builder) only.

The order is the audit's (campaigns first, then the billing reads), which its reports keep.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pipelines.snapshots.rows import (
    SnapshotRows,
    breakdown_rows,
    campaign_rows,
    consumption_rows,
    subscription_rows,
)

# A payload, the columns every row carries (account, fetched_at, run_id), the configured
# field names -> the rows to land.
RowBuilder = Callable[[Any, dict[str, Any], dict[str, str]], SnapshotRows]
# The key scope that opens an endpoint, in the audit inventory's words.
KeyScope = Literal["billing", "campaigns"]


@dataclass(frozen=True)
class AuditProbe:
    """What the key audit learns when a key reads the endpoint."""

    scope: KeyScope
    data: str  # what a holder of the key can read there, for messages


@dataclass(frozen=True)
class SnapshotEndpoint:
    name: str
    path: str
    table: str  # the DuckDB table, and the Dagster asset's name
    description: str
    rows: RowBuilder
    audit: AuditProbe | None  # None: the key audit does not probe it


SNAPSHOTS: tuple[SnapshotEndpoint, ...] = (
    SnapshotEndpoint(
        "campaign",
        "/Campaign",
        "campaigns",
        "Campaign ids and names.",
        campaign_rows,
        AuditProbe("campaigns", "the campaigns"),
    ),
    SnapshotEndpoint(
        "consumption",
        "/Consumption",
        "consumption_snapshots",
        "The credit balance summary: balance, usage, billing period.",
        consumption_rows,
        AuditProbe("billing", "the credit balance"),
    ),
    SnapshotEndpoint(
        "breakdown",
        "/Consumption/breakdown",
        "breakdown_snapshots",
        "Consumption of the current period per agent, campaign and channel.",
        breakdown_rows,
        AuditProbe("billing", "the consumption breakdown"),
    ),
    SnapshotEndpoint(
        "subscription",
        "/Subscription",
        "subscription_snapshots",
        "The subscription contract (plan, status, features, limits).",
        subscription_rows,
        AuditProbe("billing", "the subscription contract"),
    ),
)
TABLES: tuple[str, ...] = tuple(e.table for e in SNAPSHOTS)
