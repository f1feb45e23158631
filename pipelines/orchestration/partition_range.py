"""The run tags that make one run cover a range of an asset's partitions (the ledger's single-run
backfill): the daily schedule's runs and the CLI's carry them.

Dagster exports no constant for these names (it keeps them in a private module), but the names
are not private: they are the tags its UI shows on such a run and that it writes into every run
it stores, so they are spelled here. tests/dagster/test_private_api.py fails if the installed
Dagster spells them otherwise.
"""

from __future__ import annotations

from datetime import date

PARTITION_RANGE_START_TAG = "dagster/asset_partition_range_start"
PARTITION_RANGE_END_TAG = "dagster/asset_partition_range_end"


def partition_range_tags(first: date, last: date) -> dict[str, str]:
    """The tags of a run over the daily partitions ``first`` to ``last``, both included."""
    return {
        PARTITION_RANGE_START_TAG: first.isoformat(),
        PARTITION_RANGE_END_TAG: last.isoformat(),
    }
