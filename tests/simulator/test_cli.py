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

from simulator import Simulator
from simulator.cli import simulate
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
