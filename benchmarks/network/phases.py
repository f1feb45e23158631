"""A daily sync's phases, from benchmarks/sync_phases.py's stamps on its stderr.

Each ``[  N.NNs] < name T.TTs`` stamp closes a phase; phases nest (a job's run holds its steps).
The time outside the stamps (the interpreter starting, the process exiting) is a phase too, so
the phases account for the whole wall time a user waits.
"""

from __future__ import annotations

import re
from typing import Any

# A sync's runs, in order: the ledger and the snapshots in one, then the reconciliation.
JOBS = ("ledger_and_snapshot_sync", "reconciliation_run")
STAMP = re.compile(r"^\[\s*([\d.]+)s\] (.*)$", re.MULTILINE)


def phases(stderr: str, wall_s: float) -> list[dict[str, Any]]:
    """benchmarks/sync_phases.py's stamps as phases, in the order they ended: importing the CLI,
    importing what only a sync needs, each ``< name Ns`` (phases nest: a job's run holds its
    steps), and the time outside the stamps (the interpreter starting before them, the process
    exiting after ``end``). Its ``run_job`` stamps do not say which job: the sync runs JOBS in
    this order, so they are named."""
    out: list[dict[str, Any]] = []
    end = None
    cli_at = 0.0
    jobs = iter(JOBS)
    for at_text, label in STAMP.findall(stderr):
        at = float(at_text)
        if label == "imported the CLI":
            out.append({"phase": "importing the CLI", "from_s": 0.0, "to_s": at, "took_s": at})
            cli_at = at
        elif label == "imported the sync":  # what the CLI imports only to sync
            phase = {"phase": "importing the sync", "from_s": cli_at, "to_s": at}
            out.append({**phase, "took_s": at - cli_at})
        elif label.startswith("< "):
            name, _, took_text = label[2:].rpartition(" ")
            try:
                took = float(took_text.rstrip("s"))
            except ValueError:  # two threads' stamps run together on one line
                continue
            if name == "run_job":
                name = f"run_job {next(jobs, '')}".strip()
            out.append({"phase": name, "from_s": at - took, "to_s": at, "took_s": took})
        elif label == "end":
            end = at
    if end is not None:
        outside = max(0.0, wall_s - end)
        out.append(
            {
                "phase": "outside the stamps (start, exit)",
                "from_s": end,
                "to_s": wall_s,
                "took_s": outside,
            }
        )
    return out


def phases_table(title: str, steps: list[dict[str, Any]]) -> tuple[str, list[str], list[list[str]]]:
    """The phases as a report's extra table (daily, and accounts with ``--phases``)."""
    rows = [[p["phase"], *(f"{p[k]:.2f}" for k in ("from_s", "to_s", "took_s"))] for p in steps]
    return (title, ["phase", "from s", "to s", "took s"], rows)
