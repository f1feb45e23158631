"""One clear line for every failure a user can cause or meet, never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from pipelines.api.errors import ApiError
from pipelines.runtime.visible_text import one_line
from pipelines.warehouse.errors import WarehouseError
from pipelines.warehouse.lock import WarehouseBusy

# Every command loads this module, and `creditlens --help` only this and typer: nothing here may
# pull Dagster, DuckDB or polars in (the commands import what they use when they run).


class UsageError(Exception):
    """A command that cannot do what it was asked (exit 1): a combination it refuses, a
    warehouse that is not there yet."""


class BadFlag(UsageError):
    """A flag's value no run could use (a malformed or impossible date range): exit 2, as for
    an unknown flag (README, Exit codes)."""


class RunFailed(RuntimeError):
    """A job failed; the message is the first failure's own message, without a traceback.
    (Raised by pipelines/cli/runner.py; defined here so catching it costs no Dagster import.)"""


KNOWN = (ApiError, RunFailed, WarehouseError, WarehouseBusy, UsageError, OSError)


def fail(message: str, code: int = 1) -> None:
    """The one place a command's error line is written: always one line, nothing in it able to
    move the cursor, recolour or reverse the terminal (a server's detail can carry all three)."""
    typer.echo(f"creditlens: error: {one_line(message)}", err=True)
    raise typer.Exit(code)


@contextmanager
def clear_errors() -> Iterator[None]:
    try:
        yield
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        typer.echo("creditlens: interrupted", err=True)
        raise typer.Exit(130) from None
    except BadFlag as exc:
        fail(str(exc), code=2)
    except KNOWN as exc:
        fail(str(exc) or type(exc).__name__)
    except Exception as exc:  # the last line of defence: still one line, with the kind
        if "--debug" in sys.argv:
            raise
        fail(f"unexpected {type(exc).__name__}: {exc}")
