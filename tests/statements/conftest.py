"""One synced warehouse per session, never closed nor written: each test closes a copy of it
(a sync of the simulator is seconds; the modules here all read the same one); and one empty
warehouse per session, for the tests that start from nothing."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipelines.config.settings import Settings
from pipelines.warehouse.writer import Warehouse
from tests.conftest import Simulated, creditlens_variables, serving, synced_once


@pytest.fixture(scope="session")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Simulated, Path]]:
    folder = tmp_path_factory.mktemp("statements-synced")
    with serving("small") as s:
        synced_once(s, folder)
        yield s, folder / "warehouse.duckdb"


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
        s, warehouse = synced
        if not (tmp_path / "warehouse.duckdb").exists():
            shutil.copy(warehouse, tmp_path / "warehouse.duckdb")
        env = creditlens_variables(s, tmp_path, **extra)
        return env, Settings.from_env(env, cwd=tmp_path)

    return make
