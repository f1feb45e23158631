"""One synced warehouse (tests/shared_sync.py's, made once per process) and one set of receivers
per session: each test works on a copy of the warehouse, never on the original, and clears the
receivers first."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.alerts.receivers import Received, receivers
from tests.conftest import Simulated, creditlens_variables
from tests.shared_sync import small_synced


@pytest.fixture(scope="session")
def synced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Simulated, Path]:
    return small_synced(tmp_path_factory)


@pytest.fixture(scope="session")
def servers() -> Iterator[tuple[Received, int, int]]:
    with receivers() as found:
        yield found


@pytest.fixture
def setup(
    synced: tuple[Simulated, Path], servers: tuple[Received, int, int], tmp_path: Path
) -> tuple[dict[str, str], Received, int, int]:
    """(the environment of a user with a copy of the synced warehouse, the receivers, ports)."""
    s, warehouse = synced
    # The whole folder: the warehouse with its analyst copy, as a sync leaves a user's folder
    # (with the warehouse alone, each test's first command re-exported every table).
    shutil.copytree(warehouse.parent, tmp_path, dirs_exist_ok=True)
    received, http_port, smtp_port = servers
    received.clear()
    env = creditlens_variables(s, tmp_path, CREDITLENS_CONFIG=str(tmp_path / "creditlens.toml"))
    return env, received, http_port, smtp_port
