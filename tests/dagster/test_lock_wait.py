"""A wait on the warehouse's lock is said, with who holds it, and is not counted as fetch time.

With the lock held, steps used to sit "Executing" with no word about a lock, and the CLI counted
the wait as fetch time (16.19 s for 6 pages that take 0.2 s).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest
from dagster import DagsterInstance, RunsFilter

from pipelines.dagster_home.home import HOME_NAME
from pipelines.warehouse.lock import file_lock, holding_for
from tests.dagster.support import Env, Start, run_log

# Long enough that the wait (>= HOLD_S - 0.5) is plainly more than the fetch of one day's few
# pages it is kept apart from (well under a second on loopback), no longer: it is slept for real.
HOLD_S = 2.0
SUMMARY = re.compile(r"\((\d+) windows, (\d+) pages, ([\d.]+)s\), after waiting ([\d.]+)s")


@pytest.mark.slow
def test_a_held_lock_is_reported_with_its_holder_and_kept_out_of_fetch_time(
    simulated: Start, creditlens_env: Env
) -> None:
    s = simulated("small")
    settings = creditlens_env(s, persistent_dagster=True, CREDITLENS_HISTORY_LIMIT="0")
    day = s.first_day.isoformat()
    command = [sys.executable, "-m", "pipelines.cli", "sync", "--since", day, "--until", day]
    with (
        holding_for("held-by-the-test", "a long write"),
        file_lock(settings.warehouse, exclusive=True, timeout_s=60),
    ):
        child = subprocess.Popen(
            command, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert child.stderr is not None
        waited = []
        for line in child.stderr:  # the wait is said as soon as it starts
            waited.append(line)
            if "waiting for the warehouse lock" in line:
                break
        time.sleep(HOLD_S)
    out, rest = child.communicate(timeout=240)
    err = "".join(waited) + rest
    assert child.returncode == 0, err[-2000:]

    said = next(line for line in err.splitlines() if "waiting for the warehouse lock" in line)
    assert f"held by run held-by-the-test (a long write), pid {os.getpid()} on " in said
    assert "giving up after 600 s" in said
    assert "got the warehouse lock after waiting" in err

    summary = SUMMARY.search(out)
    assert summary is not None, out
    own_time, lock_wait = float(summary[3]), float(summary[4])
    assert lock_wait >= HOLD_S - 0.5
    assert own_time < lock_wait  # the wait is reported apart, not as fetch time

    # The same words are in the run's event log, where the UI shows them.
    dagster_instance = DagsterInstance.from_config(str(settings.warehouse.parent / HOME_NAME))
    ledger_run = dagster_instance.get_runs(RunsFilter(job_name="ledger_and_snapshot_sync"))[0]
    messages = [e.user_message for e in run_log(dagster_instance, ledger_run.run_id)]
    assert any("held by run held-by-the-test (a long write)" in m for m in messages)
