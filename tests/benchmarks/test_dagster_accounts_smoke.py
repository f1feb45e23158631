"""The benchmark of Dagster's cost per company still runs: three companies, each model, in this
process (``--here``), no timing."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_dagster_accounts_runs_every_model(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.dagster_accounts import main
    from pipelines.cli.runner import EPHEMERAL_EVENT_SETTINGS

    for name in EPHEMERAL_EVENT_SETTINGS:  # the run sets them: undone after the test
        monkeypatch.delenv(name, raising=False)
    code = main(["--accounts", "3", "--here"])
    done = capsys.readouterr()
    assert code == 0, done.out[-2000:] + done.err[-2000:]
    assert "| accounts | per-account assets | per-account checks | one event per step |" in done.out
    assert done.out.count("| 3 | ") == 1
    assert "load average (1, 5, 15 min): " in done.out
