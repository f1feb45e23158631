"""The tree stays `ruff check` and `ruff format` clean: style is part of the build."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_ruff_check_is_clean() -> None:
    result = ruff("check", ".")
    assert result.returncode == 0, result.stdout[-3000:]


def test_ruff_format_is_clean() -> None:
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, result.stdout[-3000:]
