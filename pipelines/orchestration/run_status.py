"""Which Dagster runs have not ended: one declaration for the automation and the instance.

The automation waits while the latest ledger sync is unfinished (queued, starting, started,
cancelling: any of these may still land the ledger). The instance looks for CLI runs left behind
by a process that died: of the unfinished, only those a process had started, since a CLI run is
executed in-process and never queued, and a cancelling run is left to its canceller.
"""

from __future__ import annotations

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
