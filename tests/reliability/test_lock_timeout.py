"""CREDITLENS_LOCK_TIMEOUT_S is the one source of every wait for the warehouse's lock.

Many commands used to wait 600 s whatever the setting said (a default in ``open_warehouse``,
``file_lock`` and the readers, a second copy in the Dagster resource): with the lock held by
another process, `breaks`, `audit`, `report` and the start of `sync` sat for ten minutes.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.config.settings import AUDIT_SECRET_ENV, Settings
from pipelines.resources.warehouse import WarehouseResource
from tests.audit.audit_helpers import SECRET, key_block, write_inventory
from tests.conftest import Simulated, creditlens_variables
from tests.pipeline.helpers import copy_folder
from tests.reliability.support import assert_one_clear_error_line, cli_logged
from tests.shared_sync import small_synced

ROOT = Path(__file__).resolve().parents[2]

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
def synced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Simulated, Path]:
    """A copy of the small scenario's synced warehouse (tests/shared_sync.py's, which the
    alerts', statements' and export's tests read too: one sync per test process, not one more
    here), whose lock the test holds: any synced warehouse proves the wait."""
    s, warehouse = small_synced(tmp_path_factory)
    folder = tmp_path_factory.mktemp("locked")
    copy_folder(warehouse.parent, folder)
    return s, folder


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


@pytest.mark.slow
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
    # One command in a real process, as a scheduler runs it, waiting while the others run one
    # after another through the same entry point in this process (a fresh interpreter costs
    # seconds of imports each; the lock is held by another process either way).
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", *commands["sync"]],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    results = {
        name: cli_logged(*args, env=env, inherit=False)
        for name, args in commands.items()
        if name != "sync"
    }
    try:
        out, err = child.communicate(
            timeout=max(1.0, GAVE_UP_WITHIN_S - (time.monotonic() - started))
        )
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail(f"`creditlens sync` still waited after {GAVE_UP_WITHIN_S:.0f} s")
    results["sync"] = subprocess.CompletedProcess(child.args, child.returncode, out, err)
    took = time.monotonic() - started
    assert took < GAVE_UP_WITHIN_S, f"the commands waited {took:.0f} s in all"
    for name, result in results.items():
        line = assert_one_clear_error_line(result, "stayed locked", alone=False)
        assert "held-by-another-process (a long write)" in line, (name, line)
        assert f"pid {held.pid} on " in line and "for 1s" in line, (name, line)
        assert "crashed" not in line, (name, line)
        print(f"reliability: lock held, `creditlens {name}`: {line}")


# Every function that waits for the lock takes how long as ``lock_timeout_s`` (``file_lock``:
# ``timeout_s``): none may have a default, or a caller forgets it and waits another time than the
# setting says. Found by walking the production packages, so a new reader cannot slip one in;
# the one home of the setting (its declaration, with its documented default) is not a waiter.
WAIT_PARAMETERS = ("lock_timeout_s",)
THE_SETTING = {"pipelines.config.settings.Settings"}


def _waiters() -> list[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for package in ("pipelines", "dashboards"):
        for info in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
            if info.name.endswith("__main__"):  # running it is its import
                continue
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if getattr(value, "__module__", None) != module.__name__:
                    continue
                members = [(name, value)]
                if inspect.isclass(value):
                    members += [
                        (f"{name}.{m}", f) for m, f in vars(value).items() if inspect.isfunction(f)
                    ]
                for label, member in members:
                    try:
                        parameters = inspect.signature(member).parameters
                    except (TypeError, ValueError):
                        continue
                    found.update(
                        (f"{module.__name__}.{label}", p)
                        for p in WAIT_PARAMETERS
                        if p in parameters
                    )
    found.add(("pipelines.warehouse.lock.file_lock", "timeout_s"))
    return sorted((q, p) for q, p in found if q not in THE_SETTING)


WAITERS = _waiters()


def test_the_waiters_are_found() -> None:
    names = {name for name, _ in WAITERS}
    known = {
        "pipelines.warehouse.lock.file_lock",
        "pipelines.warehouse.writer.Warehouse",
        "dashboards.site.build_site",
        "pipelines.warehouse.read.open_read_only",
        "pipelines.warehouse.outcomes.outcomes_of_sync",
    }
    assert known <= names, known - names


@pytest.mark.parametrize(("qualified", "name"), WAITERS, ids=lambda w: w)
def test_no_function_has_a_default_wait(qualified: str, name: str) -> None:
    module_name, attribute = _split(qualified)
    waiter: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        waiter = getattr(waiter, part)
    parameter = inspect.signature(waiter).parameters[name]
    assert parameter.default is inspect.Parameter.empty, f"{qualified}({name}=...) has a default"


def _split(qualified: str) -> tuple[str, str]:
    """The longest importable module prefix of ``qualified``, and the attribute path after it."""
    parts = qualified.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            importlib.import_module(module_name)
        except ImportError:
            continue
        return module_name, ".".join(parts[cut:])
    raise AssertionError(qualified)


def test_the_setting_is_the_only_source(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CREDITLENS_WAREHOUSE", str(tmp_path / "w.duckdb"))
    monkeypatch.setenv("CREDITLENS_LOCK_TIMEOUT_S", "7")
    settings = Settings.from_env()
    assert list(inspect.signature(settings.open_warehouse).parameters) == []
    assert settings.open_warehouse().lock_timeout_s == 7
    assert "lock_timeout_s" not in WarehouseResource.model_fields  # no second copy to disagree
