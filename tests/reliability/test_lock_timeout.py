"""CREDITLENS_LOCK_TIMEOUT_S is the one source of every wait for the warehouse's lock.

Many commands used to wait 600 s whatever the setting said (a default in ``open_warehouse``,
``file_lock`` and the readers, a second copy in the Dagster resource): with the lock held by
another process, `breaks`, `audit`, `report` and the start of `sync` sat for ten minutes.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dashboards.read import read_warehouse
from dashboards.site import build_site
from pipelines.resources.warehouse import WarehouseResource
from pipelines.settings import AUDIT_SECRET_ENV, Settings
from pipelines.warehouse import read, row_counts
from pipelines.warehouse.connection import open_for_write
from pipelines.warehouse.lock import file_lock
from pipelines.warehouse.writer import Warehouse
from tests.audit.audit_helpers import SECRET, key_block, write_inventory
from tests.conftest import Simulated, creditlens_variables, serving, synced_once
from tests.reliability.support import assert_one_clear_error_line

# Generous: the point is one second against the 600 s these commands used to wait.
GAVE_UP_WITHIN_S = 90.0
HOLDER = """
import sys, time
from pathlib import Path
from pipelines.warehouse.lock import file_lock, holding_for
with holding_for("held-by-another-process", "a long write"):
    with file_lock(Path(sys.argv[1]), exclusive=True, timeout_s=60):
        print("held", flush=True)
        time.sleep(600)
"""


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Simulated, Path]]:
    folder = tmp_path_factory.mktemp("locked")
    with serving("small") as s:
        synced_once(s, folder)
        yield s, folder


@pytest.fixture
def held(synced: tuple[Simulated, Path]) -> Iterator[subprocess.Popen[str]]:
    """The warehouse's lock, held by another process for as long as the test runs."""
    _, folder = synced
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder / "warehouse.duckdb")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    try:
        yield holder
    finally:
        holder.kill()
        holder.wait()


def test_every_command_gives_up_at_the_setting_naming_the_holder(
    synced: tuple[Simulated, Path], held: subprocess.Popen[str], tmp_path: Path
) -> None:
    s, folder = synced
    env = {k: v for k, v in os.environ.items() if not k.startswith("CREDITLENS_")}
    env.pop("DAGSTER_HOME", None)
    env |= creditlens_variables(s, folder, CREDITLENS_LOCK_TIMEOUT_S="1")
    env |= {AUDIT_SECRET_ENV: SECRET.decode(), "AUDITED_KEY": s.key}
    inventory = write_inventory(tmp_path, key_block("main", "AUDITED_KEY", "full"))
    commands = {
        "sync": ["sync"],
        "breaks list": ["breaks", "list"],
        "breaks ack": ["breaks", "ack", "brk_0", "--reason", "known"],
        "breaks unack": ["breaks", "unack", "brk_0"],
        "report": ["report", "--out", str(tmp_path / "site")],
        "audit": ["audit", "--inventory", str(inventory), "--base-url", s.url],
    }
    started = time.monotonic()
    running = {
        name: subprocess.Popen(
            [sys.executable, "-m", "pipelines.cli", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, args in commands.items()
    }
    results = {}
    for name, child in running.items():
        try:
            out, err = child.communicate(
                timeout=max(1.0, GAVE_UP_WITHIN_S - (time.monotonic() - started))
            )
        except subprocess.TimeoutExpired:
            for other in running.values():
                other.kill()
            pytest.fail(f"`creditlens {name}` still waited after {GAVE_UP_WITHIN_S:.0f} s")
        results[name] = subprocess.CompletedProcess(child.args, child.returncode, out, err)
    for name, result in results.items():
        line = assert_one_clear_error_line(result, "stayed locked", alone=False)
        assert "held-by-another-process (a long write)" in line, (name, line)
        assert f"pid {held.pid} on " in line and "for 1s" in line, (name, line)
        assert "crashed" not in line, (name, line)
        print(f"reliability: lock held, `creditlens {name}`: {line}")


# Every function that waits for the lock, and the parameter that says how long: none may have a
# default, or a caller forgets it and waits another time than the setting says.
WAITERS: list[tuple[Callable[..., object], str]] = [
    (file_lock, "timeout_s"),
    (open_for_write, "lock_timeout_s"),
    (read.open_read_only, "lock_timeout_s"),
    (read.last_synced_days, "lock_timeout_s"),
    (read.latest_sync_counts_of, "lock_timeout_s"),
    (read.duplicate_entry_ids_of, "lock_timeout_s"),
    (read.recorded_first_days, "lock_timeout_s"),
    (row_counts.table_rows, "lock_timeout_s"),
    (row_counts.ledger_days, "lock_timeout_s"),
    (read_warehouse, "lock_timeout_s"),
    (build_site, "lock_timeout_s"),
    (Warehouse, "lock_timeout_s"),
]


@pytest.mark.parametrize(("waiter", "name"), WAITERS, ids=lambda w: getattr(w, "__name__", w))
def test_no_function_has_a_default_wait(waiter: Callable[..., object], name: str) -> None:
    parameter = inspect.signature(waiter).parameters[name]
    assert parameter.default is inspect.Parameter.empty


def test_the_setting_is_the_only_source(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CREDITLENS_WAREHOUSE", str(tmp_path / "w.duckdb"))
    monkeypatch.setenv("CREDITLENS_LOCK_TIMEOUT_S", "7")
    settings = Settings.from_env()
    assert list(inspect.signature(settings.open_warehouse).parameters) == []
    assert settings.open_warehouse().lock_timeout_s == 7
    assert "lock_timeout_s" not in WarehouseResource.model_fields  # no second copy to disagree
