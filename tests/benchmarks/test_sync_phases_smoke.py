"""The sync phase timer still runs a real sync and stamps its phases (no timing assertions).

Its ``main`` runs in this process (tests/benchmarks/in_process.py), in the environment a child of
its own would get, and puts back the functions it wrapped: the stamps prove the wrappers sit on
the sync's real phases. As a process of its own, `python -m benchmarks.sync_phases` runs in
tests/benchmarks/test_network_smoke.py's daily sync, which reads its phases.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

import pipelines.cli.sync_command as sync_command
from benchmarks.peers.creditlens_sync import sync_environment
from benchmarks.sync_phases import main
from tests.benchmarks.in_process import run_main
from tests.conftest import Simulated


@pytest.mark.slow
def test_sync_phases_stamps_each_phase_of_a_real_sync(
    simulated: Callable[..., Simulated], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = simulated("small")
    env = sync_environment(s.url, s.key, s.company, tmp_path, s.first_day)
    # Runs recorded in an ephemeral instance, as tests/conftest.py's syncs are: the stamps are
    # what is read, and the instance's phase is stamped either way.
    env["CREDITLENS_DAGSTER_INSTANCE"] = "ephemeral"
    run_job = sync_command.run_job
    done = run_main(main, ["--since", s.first_day.isoformat()], capsys, env=env)
    assert sync_command.run_job is run_job  # the wrappers are gone again
    assert done.code == 0, done.out[-2000:] + done.err[-2000:]
    finished = set(re.findall(r"< (\w+) [\d.]+s", done.err))
    assert {
        "instance",
        "run_job",
        "stage_windows",
        "land_ledgers",
        "land_snapshots",
        "publish_now",
    } <= finished
    assert "] end" in done.err
    assert "landed" in done.out  # the sync's own summary, unchanged
