"""A TOML configuration file read the way every one of ours is: named as the user wrote it, parsed
once, and refused in one line that names the file and never quotes a value."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pipelines.api.errors import ConfigurationError

# tomllib's syntax error, "<what> (at line N, column M)": said as "line N, column M: <what>".
SYNTAX = re.compile(r"^(?P<what>.*) \(at line (?P<line>\d+), column (?P<column>\d+)\)$")


def config_error(label: str, *parts: str) -> ConfigurationError:
    """The one line: a quoted key or name holding a line break must not make it two."""
    return ConfigurationError(" ".join(": ".join((label, *parts)).split()))


def file_label(path: Path, cwd: Path | None) -> str:
    """The file as the user would name it: relative to the working directory when inside it."""
    if cwd is not None and path.is_relative_to(cwd):
        return str(path.relative_to(cwd))
    return str(path)


def read_document(path: Path, label: str) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's messages quote at most a key or one character, never a value.
        problem = str(exc)
        if found := SYNTAX.match(problem):
            problem = f"line {found['line']}, column {found['column']}: {found['what']}"
        raise config_error(label, problem) from None
    except UnicodeDecodeError:
        raise config_error(label, "not UTF-8 text") from None
    except OSError as exc:
        raise config_error(label, f"cannot be read: {exc.strerror or type(exc).__name__}") from None
