"""The reconciliation job; the daily refresh schedule runs it after the snapshots.

It ends with the ledger's ``accounts_synced`` (with an accounts file), evaluated after the
reconciliation: the last run of a sync names every account that failed in any of its steps.
"""

from dagster import AssetCheckKey, AssetSelection, define_asset_job

from pipelines.ledger.accounts_synced import LEDGER
from pipelines.ledger.checks import FETCHED, UNIQUE
from pipelines.reconciliation.assets import GROUP

# The ledger's checks but its invariants (they belong to the run that lands it): accounts_synced,
# where it is defined.
ACCOUNTS_SYNCED = AssetSelection.checks_for_assets(LEDGER) - AssetSelection.checks(
    *(AssetCheckKey(LEDGER, name) for name in (FETCHED, UNIQUE))
)

reconciliation_job = define_asset_job(
    "reconciliation_run",
    # each account's outputs (or the plain ones), then accounts_synced over the whole sync
    selection=AssetSelection.groups(GROUP) | ACCOUNTS_SYNCED,
    description="Reconcile the landed ledger against itself and the snapshots.",
)
