"""A sync disposes the Dagster instance it recorded its runs in, whether its runs succeed or
the command fails.

An ephemeral instance holds its in-memory databases' SQLite connections open for as long as it
lives, and Dagster's own contexts keep it alive after the runs. Left to the garbage collector,
a connection is closed in whichever thread happens to free it; SQLite refuses a connection from
another thread, and SQLAlchemy logs the refusal with its traceback: on stderr, in the middle
of a later command's output (the demo's month close syncs again in the same process).
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from dagster import DagsterInstance
from dagster._core.storage.event_log import InMemoryEventLogStorage
from dagster._core.storage.runs import InMemoryRunStorage

from pipelines.cli.errors import RunFailed
from tests.conftest import Simulated, sync_into
from tests.dagster.support import Start


def _open_connections() -> list[str]:
    """The in-memory storages of live instances whose connection is still open."""
    found = []
    for instance in (o for o in gc.get_objects() if isinstance(o, DagsterInstance)):
        for storage in (instance.run_storage, instance.event_log_storage):
            in_memory = isinstance(storage, InMemoryRunStorage | InMemoryEventLogStorage)
            # Dagster's held connection, and the CLI's one for every statement
            # (pipelines/dagster_home/one_connection.py).
            held = [getattr(storage, name, None) for name in ("_held_conn", "_one")]
            if in_memory and any(c is not None and not c.closed for c in held):
                found.append(type(storage).__name__)
    return found


@pytest.mark.parametrize("fails", [False, True], ids=["synced", "failed"])
def test_a_sync_leaves_no_dagster_connection_open(
    simulated: Start, tmp_path: Path, fails: bool
) -> None:
    s: Simulated = simulated("small")
    before = len(_open_connections())  # another test's instance is not this one's
    if fails:  # every read of the balance fails, past a budget of one retry
        s.sim.faults.set_rate(1.0, ("500",), path="/Consumption", retry_after=0)
        with pytest.raises(RunFailed, match="GET /Consumption failed: 500"):
            sync_into(s, tmp_path, CREDITLENS_MAX_RETRIES="1")
    else:
        _, report = sync_into(s, tmp_path)
        assert not report.failures()
    assert len(_open_connections()) == before
