"""Running ``creditlens audit`` as CI runs it: stdout and stderr apart, never a terminal."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import typer
from click.testing import Result
from typer.testing import CliRunner

from pipelines.api.redact import needles
from pipelines.cli.audit_command import audit
from pipelines.config.settings import AUDIT_SECRET_ENV
from tests.audit.audit_helpers import SECRET


def command() -> typer.Typer:
    app = typer.Typer()
    app.command()(audit)
    return app


def run_cli(args: Sequence[str], env: Mapping[str, str]) -> Result:
    """The command with the audit secret set and no warehouse; COLUMNS left as CI has it."""
    full_env = {AUDIT_SECRET_ENV: SECRET.decode(), "CREDITLENS_WAREHOUSE": None, **env}
    return CliRunner().invoke(command(), list(args), env=full_env)  # type: ignore[arg-type]


def assert_no_key(texts: Iterable[str], keys: Iterable[str]) -> None:
    produced = "\n".join(texts)
    for key in keys:
        for needle in needles(key):
            assert needle.value.decode() not in produced, needle.encoding


def one_error_line(result: Result) -> str:
    """The error: exactly one line on stderr, ``creditlens: error: ...``; exit 2."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("creditlens: error: "), lines[0]
    assert "Traceback" not in result.output
    return lines[0]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
