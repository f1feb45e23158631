"""One synced warehouse (tests/shared_sync.py's, made once per process), never closed nor
written: each test closes a copy of it; and one empty warehouse per session, for the tests
that start from nothing."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.config.settings import Settings
from pipelines.warehouse.writer import Warehouse
from tests.conftest import Simulated, creditlens_variables
from tests.shared_sync import small_synced


@pytest.fixture(scope="session")
def synced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Simulated, Path]:
    return small_synced(tmp_path_factory)


@pytest.fixture(scope="session")
def empty_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a warehouse just made by ``Warehouse.ensure`` (every migration, a first
    analyst copy). Making one costs about a second of migrations; a test that needs an empty
    warehouse copies this folder (``shutil.copytree``) instead: the same files, made once."""
    folder = tmp_path_factory.mktemp("empty-warehouse")
    Warehouse(folder / "warehouse.duckdb", lock_timeout_s=60).ensure()
    return folder


Copy = Callable[..., tuple[dict[str, str], Settings]]


@pytest.fixture
def copy(synced: tuple[Simulated, Path], tmp_path: Path) -> Copy:
    """(the environment of a user with a copy of the synced warehouse, its settings); keyword
    arguments are more variables (CREDITLENS_CLOSE_AFTER_DAYS=...)."""

    def make(**extra: str) -> tuple[dict[str, str], Settings]:
        # One day of grace: the previous month closes whatever today is (the 2-day default
        # leaves it open until the 3rd), and the current one never does (none would close it
        # on its own last day): a test of the grace itself sets its own.
        extra.setdefault("CREDITLENS_CLOSE_AFTER_DAYS", "1")
        s, warehouse = synced
        if not (tmp_path / "warehouse.duckdb").exists():
            # The whole folder: the warehouse with its analyst copy, as a sync leaves it (with
            # the warehouse alone, each test's first close re-exported every table).
            shutil.copytree(warehouse.parent, tmp_path, dirs_exist_ok=True)
        env = creditlens_variables(s, tmp_path, **extra)
        return env, Settings.from_env(env, cwd=tmp_path)

    return make
