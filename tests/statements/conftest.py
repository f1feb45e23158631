"""One synced warehouse per module, never closed: each test closes a copy of it."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipelines.config.settings import Settings
from tests.conftest import Simulated, creditlens_variables, serving, synced_once


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Simulated, Path]]:
    folder = tmp_path_factory.mktemp("statements-synced")
    with serving("small") as s:
        synced_once(s, folder)
        yield s, folder / "warehouse.duckdb"


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
