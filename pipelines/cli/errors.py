"""One clear line for every failure a user can cause or meet, never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from pipelines.api.errors import ApiError
from pipelines.cli.runner import RunFailed
from pipelines.runtime.visible_text import one_line
from pipelines.warehouse.connection import WarehouseError
from pipelines.warehouse.lock import WarehouseBusy


class UsageError(Exception):
    """A bad flag or combination of flags."""


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
    except KNOWN as exc:
        fail(str(exc) or type(exc).__name__)
    except Exception as exc:  # the last line of defence: still one line, with the kind
        if "--debug" in sys.argv:
            raise
        fail(f"unexpected {type(exc).__name__}: {exc}")
