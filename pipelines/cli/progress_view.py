"""Progress of a sync: a rich bar on a terminal, plain lines otherwise (CI logs, pipes)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pipelines.runtime import progress


@contextmanager
def sync_progress(stream: Any = None) -> Iterator[None]:
    stream = stream or sys.stderr
    if stream.isatty():
        console = Console(file=stream)
        bar = Progress(
            TextColumn("[bold]ledger[/] {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("entries"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        task = bar.add_task("", total=None)

        def on_event(event: str, data: dict[str, Any]) -> None:
            if event == "ledger.start":
                bar.update(task, description=f"{data['first']}..{data['last']}")
            elif event == "ledger.page":
                bar.update(task, advance=data["entries"], description=data["window"])

        with bar, progress.listening(on_event):
            yield
        return

    # Windows (and accounts) are read side by side, so their pages interleave: a log names each
    # window of each account once, when its first page arrives.
    seen: set[tuple[str, str]] = set()
    several = False

    def on_plain(event: str, data: dict[str, Any]) -> None:
        nonlocal several
        if event == "ledger.start":
            several = data.get("accounts", 1) > 1
            what = f" for {data['accounts']} accounts" if several else ""
            print(f"ledger: reading {data['first']}..{data['last']}{what}", file=stream, flush=True)
        elif event == "ledger.page":
            account = str(data.get("account", ""))
            if (account, data["window"]) not in seen:
                seen.add((account, data["window"]))
                who = f"{account}: " if several else ""
                print(f"ledger: {who}window {data['window']}", file=stream, flush=True)

    with progress.listening(on_plain):
        yield
