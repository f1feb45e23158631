"""Which storage a CLI process records its runs with (pipelines/dagster_home/storage.py): the
CLI's own where the folder's dagster.yaml names no storage, and exactly the one it names
otherwise, Dagster's own SQLite storage included: the way to record without ours (and to
measure both, benchmarks/dagster_storage.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from pipelines.dagster_home.home import prepare
from pipelines.dagster_home.storage import (
    NO_COMPUTE_LOGS,
    BatchingSqliteEventLogStorage,
    OneConnectionSqliteRunStorage,
    creditlens_instance,
    names_its_storage,
)
from tests.conftest import Disposing


def _named(home: Path, section: dict[str, object]) -> Path:
    """``section`` added to the folder's dagster.yaml, as an operator would add it."""
    with (home / "dagster.yaml").open("a", encoding="utf-8") as config:
        config.write("\n" + yaml.safe_dump(section))
    return home


def test_a_folder_that_names_no_storage_records_with_the_clis(
    tmp_path: Path, disposing: Disposing
) -> None:
    home = prepare(tmp_path / "home")
    assert not names_its_storage(home)
    cli = disposing(creditlens_instance(home))
    assert isinstance(cli.event_log_storage, BatchingSqliteEventLogStorage)
    assert isinstance(cli.run_storage, OneConnectionSqliteRunStorage)


def test_a_folder_that_names_dagsters_sqlite_storage_records_with_dagsters(
    tmp_path: Path, disposing: Disposing
) -> None:
    home = prepare(tmp_path / "home")
    _named(home, {"storage": {"sqlite": {"base_dir": str(home)}}})
    assert names_its_storage(home)
    cli = disposing(creditlens_instance(home))
    assert type(cli.event_log_storage).__name__ == "SqliteEventLogStorage"
    assert type(cli.run_storage).__name__ == "SqliteRunStorage"
    # The same files as the default's, and still no copy of the terminal's output.
    assert (home / "history" / "runs.db").is_file()
    assert type(cli.compute_log_manager).__name__ == NO_COMPUTE_LOGS.class_name


def test_every_form_of_naming_a_storage_counts(tmp_path: Path) -> None:
    for n, key in enumerate(("storage", "run_storage", "event_log_storage", "schedule_storage")):
        home = prepare(tmp_path / str(n))
        assert names_its_storage(_named(home, {key: {"module": "m", "class": "C"}})), key
    assert not names_its_storage(tmp_path / "no-folder-yet")
