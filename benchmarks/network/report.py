"""What a network benchmark prints: one markdown table of its contenders, ratios to the floor,
the targets, and the notes that say how creditlens spent its requests.

Every table is markdown with its numbers right-aligned, pasted as is into RESULTS.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.peers.creditlens_sync import LedgerLine, SyncRun
from pipelines.api.options import ApiOptions


@dataclass
class Row:
    """One line of a benchmark's table; ``lower_bound``: stopped at a bound, ``seconds`` is >=."""

    contender: str
    seconds: float | None
    requests: int | None = None
    rate_limited: int | None = None
    peak_rss_mb: float | None = None
    vs_floor: float | None = None
    note: str = ""
    lower_bound: bool = False


@dataclass
class Report:
    benchmark: str
    network: str
    entries: int  # every account's, as the floor counted them
    accounts: int
    rows: list[Row]
    figures: dict[str, Any]
    targets: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    extra_tables: list[tuple[str, list[str], list[list[str]]]] = field(default_factory=list)


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def in_flight(run: SyncRun | None, latency_ms: float) -> float | None:
    """Requests in flight on average over the ledger step (Little's law: requests x round trip
    / time): what concurrency the sync reached, measured whether or not it reports one."""
    if run is None or not run.duration_s:
        return None
    return run.requests * latency_ms / 1000 / run.duration_s


def reported_concurrency(line: LedgerLine | None) -> str:
    """What the sync says of its concurrency, else what it was configured with."""
    if line is not None and "concurrency" in line.reported:
        return f"converged to {line.reported['concurrency']} (reported)"
    options = ApiOptions()
    return (
        f"not reported; configured {options.concurrency} a window x "
        f"{options.processes} processes (CREDITLENS_CONCURRENCY, CREDITLENS_PROCESSES)"
    )


def creditlens_note(
    line: LedgerLine | None, own: SyncRun | None, own_floor_s: float | None, latency_ms: float
) -> str:
    """creditlens's row: its ledger step, the client's own request and retry counts, the
    requests it kept in flight, and (rate-limited) the floor its own requests allow."""
    parts = ["whole process"]
    if line is not None:
        parts.append(
            f"ledger step {line.ledger_s:.1f}s, {line.windows} windows, {line.pages} pages"
        )
    if own is not None:
        parts.append(f"ledger {own.requests} requests, {own.retries} retries")
        flight = in_flight(own, latency_ms)
        if flight is not None:
            parts.append(f"{flight:.1f} in flight on average")
    if own_floor_s is not None:
        parts.append(f"its own requests / rate: {own_floor_s:.1f}s")
    return "; ".join(parts)


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table, numbers right-aligned: pasted as is into RESULTS.md."""
    numeric = [all(_numeric(row[i]) for row in rows) for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _numeric(text: str) -> bool:
    return bool(re.fullmatch(r"(>= )?[-\d,.x]+|-", text))


def table(report: Report) -> str:
    header = ["contender", "time s", "requests", "429s", "peak RSS MB", "vs floor", "note"]
    rows = [
        [
            row.contender,
            (">= " if row.lower_bound else "") + fmt(row.seconds),
            count(row.requests),
            count(row.rate_limited),
            fmt(row.peak_rss_mb, 0),
            "-"
            if row.vs_floor is None
            else f"{'>= ' if row.lower_bound else ''}{row.vs_floor:.2f}x",
            row.note,
        ]
        for row in report.rows
    ]
    parts = [markdown(header, rows)]
    for title, extra_header, extra_rows in report.extra_tables:
        parts += [f"\n{title}:\n", markdown(extra_header, extra_rows)]
    return "\n".join(parts)


def to_json(report: Report, info: dict[str, Any]) -> dict[str, Any]:
    out = asdict(report)
    out.pop("extra_tables")
    return {"machine": info, **out}
