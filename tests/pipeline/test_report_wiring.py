"""`creditlens report` and the Dagster daily refresh build the site from the warehouse alone."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from dagster import DagsterInstance, build_schedule_context

from pipelines.cli.runner import run_job
from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from pipelines.reports.schedules import monthly_finance_statement
from tests.conftest import Disposing, Simulated
from tests.pipeline.helpers import cli_in_process

Start = Callable[..., Simulated]
Env = Callable[..., Settings]


@pytest.mark.slow
def test_report_command_and_daily_refresh(
    simulated: Start, creditlens_env: Env, disposing: Disposing
) -> None:
    s = simulated("small")
    settings = creditlens_env(s)
    run_sync(settings, None, None)
    instance = disposing(DagsterInstance.ephemeral())
    outcome = run_job(build_definitions(settings), "daily_refresh", instance)
    assert outcome.materializations["reports"]["pages"] > 5
    s.server.stop()  # the report needs no API: stop the server to prove it
    # The command's entry point in-process: its parsing, output and exit code, without a child
    # interpreter's seconds of imports (a report has no process boundary to prove).
    result = cli_in_process("report")
    assert result.returncode == 0, result.stderr
    index = settings.reports_dir / "index.html"
    assert index.exists() and f"report: {index}" in result.stdout
    month = s.first_day.strftime("%Y-%m")
    assert cli_in_process("report", "--month", month).returncode == 0
    bad = cli_in_process("report", "--month", "March")
    assert bad.returncode == 1 and bad.stderr.startswith("creditlens: error: --month")


def test_monthly_schedule_asks_for_the_month_just_ended() -> None:
    context = build_schedule_context(scheduled_execution_time=datetime(2026, 3, 1, 2, tzinfo=UTC))
    request = monthly_finance_statement(context)
    assert request.run_config == {"ops": {"reports": {"config": {"month": "2026-02"}}}}
