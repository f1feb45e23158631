"""What creditlens reads and writes on Dagster's runs: which have not ended, and the tags of a
run over a range of partitions.

The automation waits while the latest ledger sync is unfinished (queued, starting, started,
cancelling: any of these may still land the ledger). The instance looks for CLI runs left behind
by a process that died: of the unfinished, only those a process had started, since a CLI run is
executed in-process and never queued, and a cancelling run is left to its canceller.

The run tags that make one run cover a range of an asset's partitions (the ledger's single-run
backfill): the daily schedule's runs and the CLI's carry them.

Dagster exports no constant for these names (it keeps them in a private module), but the names
are not private: they are the tags its UI shows on such a run and that it writes into every run
it stores, so they are spelled here. tests/dagster/test_private_api.py fails if the installed
Dagster spells them otherwise.
"""

from __future__ import annotations

from datetime import date

from dagster import DagsterRunStatus

UNFINISHED = frozenset(
    {
        DagsterRunStatus.QUEUED,
        DagsterRunStatus.NOT_STARTED,
        DagsterRunStatus.STARTING,
        DagsterRunStatus.STARTED,
        DagsterRunStatus.CANCELING,
    }
)
IN_A_PROCESS = UNFINISHED - {DagsterRunStatus.QUEUED, DagsterRunStatus.CANCELING}

PARTITION_RANGE_START_TAG = "dagster/asset_partition_range_start"
PARTITION_RANGE_END_TAG = "dagster/asset_partition_range_end"


def partition_range_tags(first: date, last: date) -> dict[str, str]:
    """The tags of a run over the daily partitions ``first`` to ``last``, both included."""
    return {
        PARTITION_RANGE_START_TAG: first.isoformat(),
        PARTITION_RANGE_END_TAG: last.isoformat(),
    }
