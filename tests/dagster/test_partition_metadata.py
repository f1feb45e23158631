"""A backfill's days each carry their own counts; the run's totals are recorded once.

A one-month backfill used to show the run's totals (its range, 6,177 entries) on each of its 31
daily partitions, so summing partitions gave 31 times the truth.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from dagster import DagsterEventType

from pipelines.orchestration.metadata import ACCOUNT_RECORDS
from tests.dagster.support import (
    Env,
    Start,
    cli_instance,
    home,
    materializations,
    run_log,
    sync_days,
)
from tests.pipeline.helpers import table

DAYS = 12


def test_each_day_carries_its_own_counts_and_the_run_its_totals_once(
    simulated: Start, creditlens_env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = simulated("small")
    settings = creditlens_env(s, persistent_dagster=True)
    home(monkeypatch, tmp_path)
    dagster_instance = cli_instance()
    outcome = sync_days(settings, dagster_instance, s.first_day, DAYS)

    per_day = dict(
        table(
            settings.warehouse,
            "SELECT strftime(entry_day, '%Y-%m-%d'), count(*) FROM ledger_entries GROUP BY 1",
        )
    )
    records = [r for r in materializations(dagster_instance) if r.run_id == outcome.run_id]
    assert len(records) == DAYS
    for record in records:
        metadata = {k: v.value for k, v in record.asset_materialization.metadata.items()}
        day_rows = per_day.get(record.partition_key, 0)
        assert metadata == {
            "entries_landed": day_rows,
            "entries_quarantined": 0,
            "dagster/row_count": day_rows,
        }, record.partition_key
    landed = sum(per_day.values())
    assert landed > DAYS  # days with entries, so a repeated total could not pass for a day's

    observations = run_log(dagster_instance, outcome.run_id, DagsterEventType.ASSET_OBSERVATION)
    assert len(observations) == 1  # every account's totals in one event
    recorded = observations[0].asset_observation.metadata  # type: ignore[union-attr]
    (totals,) = recorded[ACCOUNT_RECORDS].value
    last = s.first_day + timedelta(days=DAYS - 1)
    assert totals["range"] == f"{s.first_day.isoformat()}..{last.isoformat()}"
    assert (
        totals["entries_landed"]
        == landed
        == sum(r.asset_materialization.metadata["entries_landed"].value for r in records)
    )
    # The CLI's summary reads the totals, not the last day.
    assert outcome.materializations["ledger_entries"]["entries_landed"] == landed
