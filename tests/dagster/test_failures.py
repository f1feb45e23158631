"""A known failure ends its step as one line: Dagster's Failure in the UI, the same line in the CLI.

A rejected key used to show in the UI as a traceback headed DagsterExecutionStepExecutionError,
the useful sentence a "cause" at its bottom.

What the UI records is proven in the inner loop; that the CLI's last line on a terminal is the
same sentence needs a `creditlens` process, a ``slow`` test that proves the record again first
(the line it compares is the one the record holds).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterEventType

from pipelines.cli.runner import RunFailed
from tests.conftest import Simulated
from tests.dagster.support import Env, Start, cli_instance, home, run_log, sync_days
from tests.pipeline.helpers import cli

WRONG_KEY = "sk_live_Wrong0Key1For2The3Test"


def _rejected(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[Simulated, str]:
    """A ledger run with a rejected key, and the one line its step failed with, after proving
    the UI's record of it; the simulator and the line, for the CLI's turn."""
    s = simulated("small")
    settings = creditlens_env(
        s, persistent_dagster=True, CREDITLENS_API_KEY=WRONG_KEY, CREDITLENS_HISTORY_LIMIT="0"
    )
    home(monkeypatch, tmp_path)
    dagster_instance = cli_instance()
    with pytest.raises(RunFailed) as caught:
        sync_days(settings, dagster_instance, s.first_day, 3)
    line = str(caught.value)
    assert line.startswith("the API key was rejected (401") and "\n" not in line

    run = dagster_instance.get_runs(limit=1)[0]
    failures = run_log(dagster_instance, run.run_id, DagsterEventType.STEP_FAILURE)
    assert len(failures) == 1
    data = failures[0].dagster_event.step_failure_data  # type: ignore[union-attr]
    assert data.user_failure_data.description == line  # the UI's headline is the CLI's line
    metadata = {k: v.value for k, v in data.user_failure_data.metadata.items()}
    assert metadata["error"] == "Unauthorized" and metadata["status"] == 401
    assert metadata["retryable"] is False
    assert data.error.cls_name == "Failure"  # not DagsterExecutionStepExecutionError
    assert data.error.cause is None and data.error.context is None  # no traceback to unfold
    everything = " ".join(str(e) for e in run_log(dagster_instance, run.run_id))
    assert WRONG_KEY not in everything
    return s, line


def test_a_rejected_key_is_a_one_line_failure_in_the_ui(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _rejected(simulated, creditlens_env, monkeypatch, tmp_path)


@pytest.mark.slow
def test_a_rejected_key_is_a_one_line_failure_the_cli_prints_too(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s, line = _rejected(simulated, creditlens_env, monkeypatch, tmp_path)
    done = cli("sync", "--since", s.first_day.isoformat(), "--until", s.first_day.isoformat())
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == f"creditlens: error: {line}"
    assert "Traceback" not in done.stderr
