"""The small scenario synced once per test process, for the modules that only read it.

The alerts', statements' and FOCUS export's tests all read a warehouse of the same sync
(``serving("small")`` then ``synced_once``), each from a copy of it when they write. A sync
costs seconds, so the first module to ask makes it and the others reuse it; its simulator
serves until the process exits. A fixture of one conftest is shared by its folder only,
hence a helper every folder's session fixture calls.
"""

from __future__ import annotations

import atexit
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.conftest import Simulated, serving, synced_once

_made: dict[str, tuple[Simulated, Path]] = {}
_servers = ExitStack()
atexit.register(_servers.close)


def small_synced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Simulated, Path]:
    """(the served simulator, its synced warehouse): never write the warehouse, copy it."""
    if "small" not in _made:
        folder = tmp_path_factory.mktemp("small-synced")
        s = _servers.enter_context(serving("small"))
        synced_once(s, folder)
        _made["small"] = (s, folder / "warehouse.duckdb")
    return _made["small"]
