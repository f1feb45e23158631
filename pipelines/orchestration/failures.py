"""Known failures end a Dagster step as one line, the same line the CLI prints.

A rejected key used to show in the UI as a Python traceback headed
``DagsterExecutionStepExecutionError``, the useful sentence a "cause" at its bottom. Every
failure a user can cause or meet (a rejected key, an unreachable API, a warehouse locked past
the timeout, a bad setting, a ledger still drifting after its re-reads, an unusable warehouse)
already has one actionable line as its message; ``failing_clearly`` turns it into Dagster's
``Failure``, whose description is that line and whose metadata says what kind of failure it is,
raised with no exception chained, so no cause's traceback is attached to it. Anything else stays an
unexpected error, with its traceback, as it should.

Messages here are already free of keys: the client scrubs what servers echo, and settings
errors never repeat a value that could be one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster import Failure

from pipelines.api.errors import ApiError, ConfigurationError, ProblemError
from pipelines.runtime.visible_text import one_line as line_of
from pipelines.warehouse.connection import WarehouseError
from pipelines.warehouse.landing import InvariantBroken
from pipelines.warehouse.lock import WarehouseBusy

KNOWN: tuple[type[BaseException], ...] = (ApiError, WarehouseBusy, WarehouseError, InvariantBroken)
# Failures a later attempt may not meet: the API or the lock of the moment. A rejected key, a
# setting or a broken invariant fail the same way every time; a retry policy must not repeat them.
TRANSIENT: tuple[type[BaseException], ...] = (WarehouseBusy,)


def one_line(exc: BaseException) -> str:
    """The exception's own message on one line (the CLI's ``creditlens: error: ...``), with
    whatever could act on a terminal shown escaped."""
    return line_of(str(exc)) or type(exc).__name__


def failure_metadata(exc: BaseException) -> dict[str, Any]:
    """What kind of failure it was, for the UI and for anyone filtering failed runs."""
    metadata: dict[str, Any] = {"error": type(exc).__name__, "retryable": retryable(exc)}
    if isinstance(exc, ProblemError):
        metadata.update(status=exc.status, request=f"{exc.method} {exc.path}")
    if isinstance(exc, ConfigurationError):
        metadata["fix"] = "the settings (CREDITLENS_* variables), then reload the code location"
    return metadata


def retryable(exc: BaseException) -> bool:
    return isinstance(exc, TRANSIENT) or bool(getattr(exc, "retryable", False))


def as_failure(exc: BaseException) -> Failure:
    return Failure(
        description=one_line(exc),
        metadata=failure_metadata(exc),
        allow_retries=retryable(exc),
    )


@contextmanager
def failing_clearly() -> Iterator[None]:
    """Inside a step: a known failure ends it as a one-line ``Failure``, with no traceback."""
    try:
        yield
    except KNOWN as exc:
        raise as_failure(exc) from None  # nothing chained: no cause or context to unfold
