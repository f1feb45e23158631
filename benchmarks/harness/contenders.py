"""Every contender run one way, by every benchmark: the raw floor, dlt, `creditlens sync`.

Each is a child process (``benchmarks/peers/measured.py``): its own wall time and peak RSS, and
dlt under its own virtualenv's interpreter. ``Measured`` is one contender's run as the tables
and the JSON print it. A contender stopped at a bound (time or memory) keeps its time so far as a
lower bound (``stopped``); a dlt that fails is recorded as such (``detail["failed"]``) rather than
ending the run of the others beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness.sync_result import Synced, read_sync
from benchmarks.peers.creditlens_sync import accounts_environment, run_sync, sync_environment
from benchmarks.peers.dlt_venv import peer_command, peer_environment
from benchmarks.peers.measured import ChildOverMemory, ChildRun, ChildTimeout, run_child
from benchmarks.peers.simulated_company import SimulatedCompany, SimulatedPlatform

ROOT = Path(__file__).resolve().parents[2]
FLOOR_TIMEOUT_S = 900
DLT = "dlt rest_api"
# dlt's own process grows with N (4.4 GB at 200k, on the Python side: capping DuckDB's memory
# does not bound it); past this it is stopped, and its time so far is a lower bound.
PEER_MAX_RSS_MB = 16_000.0


@dataclass
class Measured:
    """One contender's run: wall time of its process, peak RSS of its process tree."""

    contender: str
    wall_s: float
    peak_rss_mb: float
    entries: int
    inner_s: float | None = None  # its own figure: fetch time (floor), ledger step (creditlens)
    detail: dict[str, Any] = field(default_factory=dict)
    kernel_peak_rss_mb: float = 0.0  # largest single process (wait4)
    tree_peak_rss_mb: float = 0.0  # sampled sum over the process tree
    stopped: str | None = None  # killed at a bound: wall_s is then a lower bound, entries unknown

    @classmethod
    def of_run(
        cls,
        contender: str,
        run: ChildRun,
        entries: int,
        inner_s: float | None,
        detail: dict[str, Any],
    ) -> Measured:
        """A contender that ran to its end: every memory figure comes from its child process."""
        return cls(
            contender=contender,
            wall_s=run.wall_s,
            peak_rss_mb=run.peak_rss_mb,
            kernel_peak_rss_mb=run.kernel_peak_rss_mb,
            tree_peak_rss_mb=run.tree_peak_rss_mb,
            entries=entries,
            inner_s=inner_s,
            detail=detail,
        )

    @property
    def entries_per_s(self) -> float:
        return self.entries / self.seconds if self.seconds else 0.0

    @property
    def seconds(self) -> float:
        """The figure compared: fetch time for the floor, whole process for the others."""
        return self.inner_s if self.contender.startswith("floor") else self.wall_s

    @property
    def failed(self) -> bool:
        return "failed" in self.detail

    @property
    def lower_bound(self) -> bool:
        """Stopped at a bound (not failed): ``wall_s`` is then a lower bound on its time."""
        return self.stopped is not None and not self.failed


# --- the raw floor ---------------------------------------------------------------------------


def floor_levels(text: str) -> list[str]:
    """``--floor-levels`` (an argparse type): thread counts, ``asyncN`` and ``procsN``."""
    levels = [part.strip() for part in text.split(",") if part.strip()]
    for level in levels:
        if not _floor_mode(level)[1].isdigit():
            raise argparse.ArgumentTypeError(
                f"floor level {level!r}: a thread count, asyncN or procsN"
            )
    return levels


def _floor_mode(level: str) -> tuple[str, str]:
    """(mode, workers) of a level: ``async8`` is (async, 8), ``4`` is (threads, 4)."""
    mode = next((k for k in ("async", "procs") if level.startswith(k)), "")
    return (mode or "threads"), level.removeprefix(mode)


def floor_label(level: str) -> str:
    mode, workers = _floor_mode(level)
    name = {"async": "async", "procs": "processes", "threads": "threads"}[mode]
    return f"floor {name} x{workers}"


def run_floor(company: SimulatedCompany, level: str, round_: int, workdir: Path) -> Measured:
    """benchmarks/peers/raw_floor.py at ``level`` over the company's windows, with its key."""
    mode, workers = _floor_mode(level)
    command = [sys.executable, "-m", "benchmarks.peers.raw_floor", "--base-url", company.base_url]
    for window in company.windows:
        command += ["--window", str(window)]
    command += ["--mode", mode, "--workers", workers, "--time-limit", str(FLOOR_TIMEOUT_S)]
    run = run_child(
        command,
        env={**os.environ, "BENCH_API_KEY": company.key},
        cwd=ROOT,
        timeout_s=FLOOR_TIMEOUT_S + 60,
        log_dir=workdir,
        name=f"floor-{level}-round{round_}",
    ).check(f"raw floor ({level})")
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    detail = {
        "round": round_,
        "pages": figures["pages"],
        "bytes": figures["bytes"],
        "retries": figures["retries"],
    }
    return Measured.of_run(floor_label(level), run, figures["entries"], figures["seconds"], detail)


def floor_round(
    company: SimulatedCompany, levels: Sequence[str], round_: int, workdir: Path, prefix: str = ""
) -> list[Measured]:
    """One round of the floor, every level in turn, each said as it ends."""
    out = []
    for level in levels:
        m = run_floor(company, level, round_, workdir)
        retries = m.detail["retries"]
        retried = f" ({retries} transport retries)" if retries else ""
        print(f"{prefix}{m.contender} round {round_}: {m.seconds:.2f}s{retried}")
        out.append(m)
    return out


def floor_problems(floor: Sequence[Measured], entries: int) -> list[str]:
    """Every round of every level saw ``entries``."""
    return [
        f"{m.contender} round {m.detail['round']} saw {m.entries} entries, not {entries}"
        for m in floor
        if m.entries != entries
    ]


def best_by_level(floor: Sequence[Measured]) -> dict[str, Measured]:
    """Each level's fastest round, levels in the order they first ran."""
    best: dict[str, Measured] = {}
    for m in floor:
        if m.contender not in best or m.seconds < best[m.contender].seconds:
            best[m.contender] = m
    return best


def floor_note(floor: Sequence[Measured], level: str) -> str:
    """A level's rounds (their spread is the machine's noise) and the retries they needed."""
    rounds = [m for m in floor if m.contender == level]
    retries = sum(m.detail["retries"] for m in rounds)
    times = " / ".join(f"{m.seconds:.2f}" for m in rounds)
    return f"rounds {times}; {retries} transport retries"


# --- dlt -------------------------------------------------------------------------------------


def run_dlt(
    company: SimulatedCompany,
    dlt_python: Path,
    workdir: Path,
    *,
    max_s: float,
    max_rss_mb: float | None = PEER_MAX_RSS_MB,
) -> Measured:
    """dlt's rest_api over ``company``'s windows with its key, stopped at ``max_s`` or past
    ``max_rss_mb``: then its time so far is kept, a lower bound (``stopped``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        run = run_child(
            peer_command(dlt_python, company.base_url, company.windows, workdir),
            env=peer_environment(company.key),
            cwd=workdir,
            timeout_s=max_s,
            log_dir=workdir,
            name="dlt",
            max_rss_mb=max_rss_mb,
        ).check("dlt peer")
    except ChildOverMemory as over:
        why = f"stopped past {over.limit_mb:.0f} MB"
        return _stopped(why, over.wall_s, over.peak_rss_mb)
    except ChildTimeout as late:
        return _stopped(f"stopped at its {max_s:.0f}s bound", late.wall_s, late.peak_rss_mb)
    except RuntimeError as failed:
        first = str(failed).splitlines()[0]
        return Measured(DLT, 0.0, 0.0, 0, stopped=first, detail={"failed": str(failed)})
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    detail = {"dlt_version": figures["dlt_version"], "amount_type": figures["amount_type"]}
    return Measured.of_run(DLT, run, figures["rows"], figures["seconds"], detail)


def _stopped(why: str, wall_s: float, peak_rss_mb: float) -> Measured:
    return Measured(
        contender=DLT,
        wall_s=wall_s,
        peak_rss_mb=peak_rss_mb,
        tree_peak_rss_mb=peak_rss_mb,
        entries=0,
        stopped=f"{why} after {wall_s:.1f}s",
    )


def dlt_problems(dlt: Measured | None, entries: int) -> list[str]:
    """dlt failed, or ran to its end and loaded other than ``entries``."""
    if dlt is None:
        return []
    if dlt.failed:
        return [f"dlt: {dlt.detail['failed']}"]
    if dlt.stopped is None and dlt.entries != entries:
        return [f"dlt loaded {dlt.entries} rows, the floor counted {entries}"]
    return []


# --- creditlens ------------------------------------------------------------------------------

INSTANCE_ENV = "CREDITLENS_DAGSTER_INSTANCE"
INSTANCE_HELP = (
    "where each sync records its runs (default: the product's, a persistent instance beside the "
    "warehouse, as a user's first run has it); ephemeral keeps nothing, for a smoke run whose "
    "figures are not read"
)


def sync_env(
    platform: SimulatedPlatform,
    workdir: Path,
    concurrency: int | None,
    instance: str | None = None,
) -> dict[str, str]:
    """One account: the CREDITLENS_* variables as a user sets them; several: an accounts file.
    ``instance``: the Dagster instance's kind, when not the product's default."""
    names = platform.companies
    if len(names) == 1:
        company = platform.company(names[0], "creditlens")
        return company_env(company, workdir, instance)
    accounts = [(name, platform.keys[name]["creditlens"]) for name in names]
    env = accounts_environment(
        platform.base_url, accounts, workdir, platform.first, concurrency=concurrency or len(names)
    )
    return _recorded_in(env, instance)


def company_env(
    company: SimulatedCompany, workdir: Path, instance: str | None = None
) -> dict[str, str]:
    """One company's sync, configured by the CREDITLENS_* variables alone."""
    env = sync_environment(company.base_url, company.key, company.account, workdir, company.first)
    return _recorded_in(env, instance)


def _recorded_in(env: dict[str, str], instance: str | None) -> dict[str, str]:
    """``env`` with the Dagster instance's kind, when one is asked for instead of the default."""
    return env | ({INSTANCE_ENV: instance} if instance else {})


def whole_range(company: SimulatedCompany | SimulatedPlatform) -> list[str]:
    """``--since FIRST --until LAST``: the company's whole history, a backfill."""
    return ["--since", company.first.isoformat(), "--until", company.last.isoformat()]


def measure_creditlens(
    company: SimulatedCompany, workdir: Path, *, timeout_s: float, instance: str | None = None
) -> tuple[Measured, Synced]:
    """`creditlens sync` of the company's whole history into a fresh warehouse, as a user runs
    it: the whole process timed, its ledger step (``inner_s``) read from its summary line."""
    env = company_env(company, workdir, instance)
    run = run_sync(env, workdir, whole_range(company), timeout_s=timeout_s)
    result = read_sync(run, workdir, [company.account])
    line = result.line(company.account, single=True)
    rows = result.rows.get(company.account, 0)
    detail: dict[str, Any] = {"errors": result.errors} if result.errors else {}
    if line is not None:
        detail |= {
            "fetched": line.fetched,
            "landed": line.landed,
            "quarantined": line.quarantined,
            "rows_in_warehouse": rows,
            "windows": line.windows,
            "pages": line.pages,
            "ledger_step_s": line.ledger_s,
        }
    entries = line.landed + line.quarantined if line else 0
    inner = line.ledger_s if line else None
    return Measured.of_run("creditlens sync", run, entries, inner, detail), result
