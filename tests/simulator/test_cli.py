"""`python -m simulator` / `creditlens simulate`: serves until interrupted, shows no raw keys."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import typer
from typer.testing import CliRunner

from simulator import Simulator, serve
from simulator.cli import is_loopback, key_lines, simulate
from tests.simulator.conftest import NOW

ROOT = Path(__file__).resolve().parents[2]


def test_serves_until_interrupted_and_prints_only_fingerprints() -> None:
    command = [sys.executable, "-m", "simulator", "--port", "0", "--scenario", "two_companies"]
    command += ["--seed", "3", "--key", "my-demo-key", "--now", "2025-03-15T12:00:00Z"]
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        lines = []
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "no output"
            lines.append(line)
            if line.startswith("listening on "):
                break
        url = lines[-1].split()[-1]
        response = httpx.get(url + "/Consumption", headers={"X-Api-Key": "my-demo-key"})
        assert response.status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    text = "".join(lines) + out + err
    sim = Simulator("two_companies", seed=3, now=NOW, demo_key="my-demo-key")
    for company in sim.companies:
        assert f"company {company.name}:" in text
        for key in company.keys:
            if key.secret != "my-demo-key":
                assert key.secret not in text
                assert key.fingerprint in text
    assert "my-demo-key" in text
    assert proc.returncode == 0


def test_help_documents_every_option() -> None:
    app = typer.Typer()
    app.command()(simulate)
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for option in ("--host", "--port", "--seed", "--key", "--scenario", "--now"):
        assert option in result.output
    assert "NAME" in result.output and "FILE" in result.output


def test_bad_options_are_reported_not_raised() -> None:
    app = typer.Typer()
    app.command()(simulate)
    runner = CliRunner()
    unknown = runner.invoke(app, ["--scenario", "no-such-scenario", "--port", "0"])
    assert unknown.exit_code == 2
    assert "neither a preset" in unknown.output
    bad_now = runner.invoke(app, ["--scenario", "small", "--now", "yesterday", "--port", "0"])
    assert bad_now.exit_code == 2
    assert "not an ISO 8601 date-time" in bad_now.output


def test_print_keys_shows_keys_that_work_and_says_they_are_loopback_test_keys() -> None:
    sim = Simulator("two_companies", seed=3, now=NOW, demo_key="my-demo-key")
    lines = key_lines(sim, "my-demo-key", print_keys=True)
    for company in sim.companies:
        for key in company.keys:
            [line] = [x for x in lines if f" {key.secret}" in x]
            if key.secret != "my-demo-key":
                assert line.endswith("(test key of this simulator; loopback only)"), line
    # A printed key is the key: it reads its company's balance over loopback HTTP.
    printed = [x.split()[3] for x in lines if "scope=full" in x and "revoked" not in x]
    with serve(sim) as server:
        for key in printed:
            answer = httpx.get(server.url + "/Consumption", headers={"X-Api-Key": key})
            assert answer.status_code == 200, key
    # Without the flag, fingerprints only (the extra --key, typed by the user, as given).
    hidden = "\n".join(key_lines(sim, "my-demo-key", print_keys=False))
    assert all(k.secret not in hidden for c in sim.companies for k in c.keys if k.label != "demo")


def test_print_keys_is_refused_on_an_interface_other_machines_reach() -> None:
    app = typer.Typer()
    app.command()(simulate)
    args = ["--print-keys", "--host", "0.0.0.0", "--port", "0"]
    refused = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert refused.exit_code == 2
    assert "only with a loopback --host (got '0.0.0.0')" in refused.output
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
