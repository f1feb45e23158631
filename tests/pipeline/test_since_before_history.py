"""A sync asked to start before the ledger's first day does so: the days before the first entry
come back empty, cost a request a window, the summary says where the ledger begins, and every
synced day is a partition of the ledger."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from pipelines.cli.sync_command import run_sync, summary_lines
from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from pipelines.ledger.partitions import ledger_start_day
from tests.conftest import Simulated
from tests.pipeline.helpers import cli_in_process, landed, table, truth

Start = Callable[..., Simulated]
Env = Callable[..., Settings]

RANGES = "SELECT range_start, range_end, windows, pages FROM sync_runs ORDER BY started_at"


def first_partition(settings: Settings) -> str:
    job = build_definitions(settings).resolve_job_def("ledger_sync")
    assert job.partitions_def is not None
    return job.partitions_def.get_first_partition_key()


@pytest.mark.slow
def test_since_before_the_first_entry_is_read_as_asked(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = simulated("small")
    creditlens_env(s)
    monkeypatch.delenv("CREDITLENS_LEDGER_START")  # a new user's first sync
    settings = Settings.from_env()
    since = s.first_day - timedelta(days=400)
    done = cli_in_process("sync", "--since", since.isoformat())
    assert done.returncode == 0, done.stderr
    begins = (
        f"history: the ledger begins {s.first_day.isoformat()} (its first entry, found by history "
        f"discovery); {since.isoformat()}..{(s.first_day - timedelta(days=1)).isoformat()}, "
        "before it, were read as asked"
    )
    assert begins in done.stdout, done.stdout
    assert landed(settings.warehouse) == truth(s)  # the days before came back empty
    [(first, _, windows, pages)] = table(settings.warehouse, RANGES)
    assert first == since
    assert table(settings.warehouse, "SELECT count(*) FROM hidden_movements") == [(0,)]
    assert table(settings.warehouse, "SELECT opening_status FROM reconciliation_runs") == [("ok",)]
    # The days synced before the discovered first day are partitions, for the next load too.
    assert ledger_start_day(settings) == since
    assert first_partition(settings) == since.isoformat()
    # What the 400 empty days cost: the same sync from the first day reads one window fewer
    # (wholly before the ledger: one empty page) and a page or two fewer (that page, and the
    # size probe the window after a first one may get: pipelines/ledger/window_workers.py).
    run_sync(settings, s.first_day.isoformat(), None)
    [_, (_, _, windows_from_first_day, pages_from_first_day)] = table(settings.warehouse, RANGES)
    assert windows - windows_from_first_day == 1
    assert 1 <= pages - pages_from_first_day <= 2


@pytest.mark.slow
def test_ledger_start_before_the_first_entry_and_since_before_it(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = simulated("small")
    start = s.first_day - timedelta(days=5)
    settings = creditlens_env(s, CREDITLENS_LEDGER_START=start.isoformat())
    report = run_sync(settings, None, None)
    assert report.first == start and not report.failures()
    lines = summary_lines(report)
    assert any(f"the ledger begins {s.first_day.isoformat()}" in line for line in lines), lines
    assert landed(settings.warehouse) == truth(s)
    # Earlier still than CREDITLENS_LEDGER_START: not an error either, and still a partition.
    since = start - timedelta(days=10)
    again = run_sync(settings, since.isoformat(), None)
    assert again.first == since and not again.failures()
    assert any(f"{since.isoformat()}..{(s.first_day - timedelta(days=1)).isoformat()}, before "
               "it, were read as asked" in line for line in summary_lines(again))  # fmt: skip
    assert landed(settings.warehouse) == truth(s)
    assert ledger_start_day(settings) == since and first_partition(settings) == since.isoformat()
