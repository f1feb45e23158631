"""Every known kind of failure is one line, with what kind it was; anything else keeps its trace.

The lock's timeout is tried in a real run: a step that cannot get the warehouse ends as Dagster's
Failure naming who holds it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterEventType, Failure

from pipelines.api.errors import (
    ConfigurationError,
    LedgerDriftError,
    TransportFailure,
    Unauthorized,
)
from pipelines.cli.runner import RunFailed, run_job
from pipelines.definitions import build_definitions
from pipelines.orchestration.failures import failing_clearly
from pipelines.warehouse.connection import WarehouseError
from pipelines.warehouse.lock import WarehouseBusy, file_lock, holding_for
from tests.dagster.support import Env, Start, cli_instance, home, run_log

KNOWN = [
    (Unauthorized(status=401, title="Unauthorized", detail="unknown", path="/Campaign"), False),
    (TransportFailure("GET /Campaign failed: no response from http://127.0.0.1:9 (refused)"), True),
    (WarehouseBusy("the warehouse /w.duckdb stayed locked by run r1 for 600s"), True),
    (ConfigurationError("CREDITLENS_BASE_URL is not set: the platform API's base URL"), False),
    (LedgerDriftError("window 2026-01-01..2026-01-31 kept changing after 5 re-reads"), False),
    (WarehouseError("cannot open the warehouse /w.duckdb: not a DuckDB file"), False),
]


@pytest.mark.parametrize(("error", "retryable"), KNOWN, ids=lambda e: type(e).__name__)
def test_a_known_failure_is_one_line_with_its_kind(error: Exception, retryable: bool) -> None:
    with pytest.raises(Failure) as caught, failing_clearly():
        raise error
    failure = caught.value
    assert failure.description == str(error) and "\n" not in failure.description
    assert failure.metadata["error"].value == type(error).__name__
    assert failure.metadata["retryable"].value is retryable
    assert failure.allow_retries is retryable
    assert failure.__cause__ is None and failure.__suppress_context__  # nothing to unfold


def test_an_unexpected_error_is_left_alone() -> None:
    with pytest.raises(ZeroDivisionError), failing_clearly():
        _ = 1 / 0


@pytest.mark.slow
def test_a_lock_held_past_the_timeout_fails_the_step_naming_its_holder(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = simulated("small")
    settings = creditlens_env(s, persistent_dagster=True, CREDITLENS_LOCK_TIMEOUT_S="0.5")
    home(monkeypatch, tmp_path)
    dagster_instance = cli_instance()
    defs = build_definitions(settings)
    with (
        holding_for("held-by-the-test", "a long write"),
        file_lock(settings.warehouse, exclusive=True, timeout_s=60),
        pytest.raises(RunFailed) as caught,
    ):
        run_job(defs, "snapshot_sync", dagster_instance)
    line = str(caught.value)
    assert line.startswith(f"the warehouse {settings.warehouse} stayed locked by run ")
    assert "held-by-the-test (a long write)" in line and line.endswith("for 0.5s")
    run = dagster_instance.get_runs(limit=1)[0]
    failures = run_log(dagster_instance, run.run_id, DagsterEventType.STEP_FAILURE)
    assert failures
    data = failures[0].dagster_event.step_failure_data  # type: ignore[union-attr]
    assert data.user_failure_data.description == line
    assert data.user_failure_data.metadata["error"].value == "WarehouseBusy"
