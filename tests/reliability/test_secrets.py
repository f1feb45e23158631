"""No API key, in any spelling, in anything creditlens writes or prints.

A demo-like sync (then its report), a sync with a revoked key, a sync through faults and a key
audit run as a user would run them, with Dagster's storage on disk; then every file under the
run's folders (warehouse, analyst copy, staging, reports, DAGSTER_HOME, audit outputs and state)
and every line of stdout and stderr is searched for every key used.

The first sync runs in a child process, so everything a real process prints is searched; the
other commands run through the same entry point in-process (a fresh interpreter costs seconds of
imports each), their streams searched as the command wrote them and, for anything written past
Python's streams to the file descriptors themselves, as the descriptors received them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from pipelines.api.errors import ApiError
from pipelines.cli.runner import RunFailed
from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from simulator import FAULT_KINDS, Scenario, ServerHandle, Simulator, serve
from tests.reliability.secrets_search import files_under, search
from tests.reliability.support import FAST_RETRIES, FAULT_DELAY_S, cli_logged, creditlens

# Distinctive keys with the characters URL-encoding and base64 change, as real keys have.
KEYS = {
    "primary": "sk_live+Rely/9f3c2a7e1b5d4f6a8c0e2b4d6f8a1c3e==",
    "campaigns": "ck_live+Rely/4e6a8c0d2f1b3d5f7a9c1e3b5d7f9a2c==",
    "revoked": "rk_live+Rely/1a3c5e7f9b2d4f6a8c0e1d3f5b7a9c2e==",
}
HISTORY_DAYS = 30
SCENARIO = Scenario.named(
    "small",
    companies=[
        {
            "name": "acme",
            "history_days": HISTORY_DAYS,
            "entries_per_day": 40,
            "keys": [
                {"label": "primary", "secret": KEYS["primary"]},
                {"label": "campaigns-only", "scope": "campaigns", "secret": KEYS["campaigns"]},
                {"label": "old-revoked", "revoked": True, "secret": KEYS["revoked"]},
            ],
        }
    ],
)
# Where the audit reads each key from: environment variables, never the file itself.
INVENTORY = """
[[keys]]
name = "nightly-sync"
env = "SYNC_KEY"
scope = "full"
places = [{ place = "creditlens nightly sync", kind = "server" }]

[[keys]]
name = "web-widget"
env = "WIDGET_KEY"
scope = "campaigns"
places = [{ place = "web/static/widget.js", kind = "client-side" }]

[[keys]]
name = "old-export"
env = "OLD_KEY"
scope = "full"
places = [{ place = "export-service", kind = "server" }]
"""


class Installation:
    """One user's folders and environment, and everything its commands printed."""

    def __init__(
        self,
        root: Path,
        sim: Simulator,
        server: ServerHandle,
        descriptors: Callable[[], tuple[str, str]],
    ) -> None:
        self.sim = sim
        self.descriptors = descriptors  # what reached fds 1 and 2 since last asked
        self.folders = {
            name: root / name for name in ("out", "dagster", "staging", "reports", "state", "repo")
        }
        for folder in self.folders.values():
            folder.mkdir(parents=True)
        first = sim.clock.now.date() - timedelta(days=HISTORY_DAYS - 1)
        self.env = {
            **{
                k: v
                for k, v in os.environ.items()
                if not k.startswith("CREDITLENS_") and k != "DAGSTER_HOME"
            },
            "CREDITLENS_BASE_URL": server.url,
            "CREDITLENS_API_KEY": KEYS["primary"],
            "CREDITLENS_ACCOUNT": "acme",
            "CREDITLENS_WAREHOUSE": str(self.folders["out"] / "warehouse.duckdb"),
            "CREDITLENS_STAGING_DIR": str(self.folders["staging"]),
            "CREDITLENS_REPORTS_DIR": str(self.folders["reports"]),
            "CREDITLENS_LEDGER_START": first.isoformat(),
            "CREDITLENS_AUDIT_STATE_DIR": str(self.folders["state"]),
            "DAGSTER_HOME": str(self.folders["dagster"]),
            **FAST_RETRIES,
        }
        self.streams: dict[str, str] = {}

    def run(
        self, name: str, *args: str, child: bool = False, **env: str
    ) -> subprocess.CompletedProcess:
        if child:
            result = creditlens(*args, env={**self.env, **env})
        else:
            self.descriptors()  # what came before is not this command's
            result = cli_logged(*args, env={**self.env, **env}, inherit=False)
            out, err = self.descriptors()
            self.streams[f"{name} fd 1"] = out
            self.streams[f"{name} fd 2"] = err
        self.streams[f"{name} stdout"] = result.stdout
        self.streams[f"{name} stderr"] = result.stderr
        return result


@pytest.fixture
def installation(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Iterator[Installation]:
    sim = Simulator(SCENARIO, demo_key=None)
    with serve(sim) as server:
        yield Installation(tmp_path, sim, server, lambda: tuple(capfd.readouterr()))


@pytest.mark.slow
def test_no_key_in_anything_written_or_printed(installation: Installation) -> None:
    i = installation
    synced = i.run("sync", "sync", child=True)
    assert synced.returncode == 0, synced.stderr[-2000:]
    reported = i.run("report", "report")
    assert reported.returncode == 0, reported.stderr[-2000:]

    rejected = i.run("revoked sync", "sync", CREDITLENS_API_KEY=KEYS["revoked"])
    assert rejected.returncode == 1 and "rejected" in rejected.stderr

    kinds = [kind for kind in FAULT_KINDS if kind != "body"]
    i.sim.faults.set_rate(0.3, kinds, seed=5, retry_after=0, delay=FAULT_DELAY_S)
    faulted = i.run(
        "faulted sync",
        "sync",
        "--since",
        i.env["CREDITLENS_LEDGER_START"],
        CREDITLENS_DRIFT_RETRIES="40",
    )
    assert faulted.returncode == 0, faulted.stderr[-2000:]
    assert i.sim.faults.fired
    i.sim.faults.clear()

    inventory = i.folders["repo"] / "keys.toml"
    inventory.write_text(INVENTORY)
    (i.folders["repo"] / "README.md").write_text("Nothing secret here.\n")
    audited = i.run(
        "audit",
        "audit",
        "--inventory",
        str(inventory),
        "--scan",
        str(i.folders["repo"]),
        "--json-out",
        str(i.folders["out"] / "audit.json"),
        "--sarif-out",
        str(i.folders["out"] / "audit.sarif"),
        SYNC_KEY=KEYS["primary"],
        WIDGET_KEY=KEYS["campaigns"],
        OLD_KEY=KEYS["revoked"],
    )
    assert audited.returncode in (0, 1), audited.stderr[-2000:]  # 2: could not run

    files = files_under(*i.folders.values())
    written = {p.suffix or p.name for p in files}
    assert {".duckdb", ".json", ".sarif", ".html"} <= written, written
    assert any(p.is_relative_to(i.folders["dagster"]) for p in files), "Dagster stored nothing"
    hits, searched = search(KEYS, files, i.streams)
    print(  # docs/reliability.md
        f"reliability: secrets keys={len(KEYS)} files={len(files)} sources={len(searched)} "
        f"streams={len(i.streams)} hits={len(hits)}"
    )
    assert not hits, hits[:10]
    assert len(searched) > len(files)  # databases were read value by value too


def test_a_server_echoing_the_key_does_not_make_us_repeat_it(
    installation: Installation,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    i = installation
    for name in list(os.environ):
        if name.startswith("CREDITLENS_") or name == "DAGSTER_HOME":
            monkeypatch.delenv(name)
    for name, value in i.env.items():
        if name.startswith("CREDITLENS_") or name == "DAGSTER_HOME":
            monkeypatch.setenv(name, value)
    echo = {
        "type": "https://tools.ietf.org/html/rfc7231#section-6.5.1",
        "title": "Bad Request",
        "status": 400,
        "detail": f"X-Api-Key {KEYS['primary']} may not read startDate before the contract",
    }
    i.sim.faults.respond(echo, status=400)
    try:
        run_sync(Settings.from_env(), None, None)
    except (RunFailed, ApiError) as error:  # history discovery asks before the ledger run
        message = str(error)
    else:
        pytest.fail("the sync should fail on a 400")
    out, err = capfd.readouterr()
    streams = {"exception": message, "stdout": out, "stderr": err}
    hits, _ = search(KEYS, files_under(*i.folders.values()), streams)
    assert not hits, sorted({(h.where.split("/")[-1], h.spelling) for h in hits})
