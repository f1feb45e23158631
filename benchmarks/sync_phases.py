"""Where a `creditlens sync` spends its wall time, phase by phase, on stderr.

    python -m benchmarks.sync_phases [sync options]

Runs the real command in this process with wall-clock stamps around its phases: importing the
CLI, Dagster's instance, each job, reading the ledger windows, landing the ledgers and storing the
snapshots (each once per sync, all accounts in one transaction), the analyst copies. A
sampling profiler cannot give this cleanly (page threads and the main thread share one
interpreter lock, so waiting looks like work); stamps can, and they cost nothing measurable.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

STARTED = time.perf_counter()


def stamp(label: str) -> None:
    print(f"[{time.perf_counter() - STARTED:7.2f}s] {label}", file=sys.stderr, flush=True)


def timed(owner: Any, name: str) -> Callable[..., Any]:
    """Replaces ``owner.name`` with a version that stamps its start and its duration; returns
    the original."""
    original: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        stamp(f"> {name}")
        try:
            return original(*args, **kwargs)
        finally:
            stamp(f"< {name} {time.perf_counter() - began:.2f}s")

    setattr(owner, name, wrapper)
    return original


@contextmanager
def phases_stamped() -> Iterator[None]:
    """The sync's phases stamped while inside, the originals put back after (a caller that runs
    the command in its own process, a smoke test, goes on with them)."""
    import pipelines.cli.sync_command as sync_command
    import pipelines.ledger.sync as ledger_sync
    from pipelines.warehouse import publish
    from pipelines.warehouse.writer import Warehouse

    # The CLI imports what a sync needs (Dagster, DuckDB, polars) when it syncs, not to start.
    stamp("imported the sync")
    # One landing of every account's ledger, one store of every account's snapshots, and the one
    # publish at the end (publish_analyst_copy only asks for it).
    phases: list[tuple[Any, str]] = [
        (sync_command, "build_definitions"),
        (sync_command, "instance"),
        (sync_command, "run_job"),
        (ledger_sync, "stage_windows"),
        (Warehouse, "land_ledgers"),
        (Warehouse, "land_snapshots"),
        (publish, "publish_now"),
    ]
    originals = [(owner, name, timed(owner, name)) for owner, name in phases]
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def main(argv: list[str]) -> None:
    import pipelines.cli.main as cli

    stamp("imported the CLI")
    with phases_stamped():
        sys.argv = ["creditlens", "sync", *argv]
        try:
            cli.main()
        finally:
            stamp("end")


if __name__ == "__main__":
    main(sys.argv[1:])
