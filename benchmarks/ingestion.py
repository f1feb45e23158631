"""How fast, and in how much memory, creditlens ingests a ledger: against the floor and a peer.

One run, one simulator process per size, three contenders reading the same range of it:

1. the raw floor: plain httpx fetching every page as bytes (sequential, threads, async);
2. creditlens: `creditlens sync --since FIRST --until LAST` end to end into a fresh warehouse;
3. the peer: dlt's `rest_api` source into DuckDB, from its own virtualenv.

The floor runs twice, before and after the others, so the spread shows how noisy the machine
was. Every contender is a child process (its own peak RSS); all run on loopback and are bounded
in time. Prints the machine, a table and the targets; `--out` writes the figures as JSON.

    python -m benchmarks.ingestion [--entries 200000[,1000000]] [--out FILE] [--skip-peer]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.peers.creditlens_sync import CreditlensRun, run_creditlens
from benchmarks.peers.dlt_venv import ensure_dlt_python
from benchmarks.peers.measured import ChildOverMemory, ChildRun, run_child
from benchmarks.peers.simulated_company import HISTORY_DAYS, SimulatedCompany, simulated_company

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NOW = "2026-06-30T23:59:59+00:00"
FLOOR_LEVELS = ("1", "2", "4", "8", "async8", "procs2")
FLOOR_TIMEOUT_S = 900
SYNC_TIMEOUT_S = 3600
PEER_TIMEOUT_S = 5400
PYCACHE = Path(tempfile.gettempdir()) / "creditlens-bench-pycache"
WARM_IMPORTS = (
    "import httpx, duckdb, polars, pipelines.cli.main, pipelines.cli.sync_command, "
    "pipelines.definitions"
)

CREDITLENS_VS_FLOOR = 1.5  # creditlens within 1.5x of the floor's best time
DLT_VS_CREDITLENS = 20.0  # dlt at least 20x slower than creditlens
RSS_LIMIT_MB = 500.0  # creditlens under 500 MB at 1M entries
RSS_LIMIT_AT = 1_000_000
RSS_GROWTH_EXPONENT = 0.5  # peak RSS ~ N^b with b below this: not growing linearly
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


@dataclass
class SizeResult:
    entries_requested: int
    entries: int
    windows: list[str]
    simulator_startup_s: float
    simulator_peak_rss_mb: float
    floor: list[Measured]
    creditlens: Measured | None
    peer: Measured | None
    problems: list[str]


def _floor_command(company: SimulatedCompany, level: str) -> list[str]:
    mode = "async" if level.startswith("async") else "procs" if level.startswith("procs") else ""
    workers = level.removeprefix(mode) if mode else level
    mode = mode or "threads"
    command = [sys.executable, "-m", "benchmarks.peers.raw_floor", "--base-url", company.base_url]
    for window in company.windows:
        command += ["--window", str(window)]
    return [*command, "--mode", mode, "--workers", workers, "--time-limit", str(FLOOR_TIMEOUT_S)]


def run_floor(company: SimulatedCompany, level: str, round_: int, workdir: Path) -> Measured:
    env = {**os.environ, "BENCH_API_KEY": company.key}
    run = run_child(
        _floor_command(company, level),
        env=env,
        cwd=ROOT,
        timeout_s=FLOOR_TIMEOUT_S + 60,
        log_dir=workdir,
        name=f"floor-{level}-round{round_}",
    ).check(f"raw floor ({level})")
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    label = (
        f"floor async x{level.removeprefix('async')}"
        if level.startswith("async")
        else f"floor processes x{level.removeprefix('procs')}"
        if level.startswith("procs")
        else f"floor threads x{level}"
    )
    detail = {"round": round_, "pages": figures["pages"], "bytes": figures["bytes"]}
    return Measured.of_run(label, run, figures["entries"], figures["seconds"], detail)


def run_creditlens_measured(
    company: SimulatedCompany, workdir: Path
) -> tuple[Measured, CreditlensRun]:
    result = run_creditlens(
        company.base_url,
        company.key,
        company.account,
        company.first,
        company.last,
        workdir,
        timeout_s=SYNC_TIMEOUT_S,
    )
    detail = {
        "fetched": result.fetched,
        "landed": result.landed,
        "quarantined": result.quarantined,
        "rows_in_warehouse": result.rows_in_warehouse,
        "windows": result.windows,
        "pages": result.pages,
        "ledger_step_s": result.ledger_s,
    }
    entries = result.landed + result.quarantined
    measured = Measured.of_run("creditlens sync", result.run, entries, result.ledger_s, detail)
    return measured, result


def run_peer(
    company: SimulatedCompany,
    dlt_python: Path,
    workdir: Path,
    max_rss_mb: float | None = PEER_MAX_RSS_MB,
) -> Measured:
    command = [str(dlt_python), str(ROOT / "benchmarks" / "peers" / "dlt_peer.py")]
    command += ["--base-url", company.base_url, "--workdir", str(workdir)]
    for window in company.windows:
        command += ["--window", str(window)]
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "BENCH_API_KEY": company.key, "RUNTIME__DLTHUB_TELEMETRY": "false"}
    env.pop("PYTHONPYCACHEPREFIX", None)  # pip compiled dlt's virtualenv: use its own .pyc
    try:
        run = run_child(
            command,
            env=env,
            cwd=workdir,
            timeout_s=PEER_TIMEOUT_S,
            log_dir=workdir,
            name="dlt",
            max_rss_mb=max_rss_mb,
        ).check("dlt peer")
    except ChildOverMemory as over:
        return Measured(
            contender="dlt rest_api",
            wall_s=over.wall_s,
            peak_rss_mb=over.peak_rss_mb,
            tree_peak_rss_mb=over.peak_rss_mb,
            entries=0,
            stopped=f"stopped past {over.limit_mb:.0f} MB after {over.wall_s:.1f}s",
        )
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    detail = {"dlt_version": figures["dlt_version"], "amount_type": figures["amount_type"]}
    return Measured.of_run("dlt rest_api", run, figures["rows"], figures["seconds"], detail)


def measure_size(
    entries: int,
    now: datetime,
    workdir: Path,
    *,
    levels: list[str],
    repeats: int,
    dlt_python: Path | None,
    history_days: int = HISTORY_DAYS,
    peer_max_rss_mb: float | None = PEER_MAX_RSS_MB,
) -> SizeResult:
    floor: list[Measured] = []
    creditlens: Measured | None = None
    peer: Measured | None = None
    problems: list[str] = []
    simulator_dir = workdir / "simulator"
    with simulated_company(entries, now, simulator_dir, history_days=history_days) as company:
        print(f"[{entries}] simulator ready in {company.startup_s:.1f}s at {company.base_url}")

        def floor_round(round_: int) -> None:
            for level in levels:
                m = run_floor(company, level, round_, workdir / "floor")
                print(f"[{entries}] {m.contender} round {round_}: {m.seconds:.2f}s")
                floor.append(m)

        floor_round(1)
        creditlens, synced = run_creditlens_measured(company, workdir / "creditlens")
        print(f"[{entries}] creditlens sync: {creditlens.wall_s:.2f}s")
        if dlt_python is not None:
            peer = run_peer(company, dlt_python, workdir / "dlt", peer_max_rss_mb)
            stopped = f" ({peer.stopped})" if peer.stopped else ""
            print(f"[{entries}] dlt rest_api: {peer.wall_s:.2f}s{stopped}")
        for round_ in range(2, repeats + 1):
            floor_round(round_)
    truth = floor[0].entries
    problems += [
        f"{m.contender} round {m.detail['round']} saw {m.entries} entries, not {truth}"
        for m in floor
        if m.entries != truth
    ]
    if synced.fetched != truth:
        problems.append(f"creditlens fetched {synced.fetched} entries, the floor {truth}")
    if synced.landed + synced.quarantined != synced.fetched:
        problems.append("creditlens: fetched != landed + quarantined")
    if synced.rows_in_warehouse != synced.landed:
        problems.append(f"warehouse holds {synced.rows_in_warehouse} rows, {synced.landed} landed")
    if peer is not None and peer.stopped is None and peer.entries != truth:
        problems.append(f"dlt loaded {peer.entries} rows, the floor fetched {truth}")
    return SizeResult(
        entries_requested=entries,
        entries=truth,
        windows=[str(w) for w in company.windows],
        simulator_startup_s=company.startup_s,
        simulator_peak_rss_mb=company.peak_rss_mb,
        floor=floor,
        creditlens=creditlens,
        peer=peer,
        problems=problems,
    )


# --- figures -------------------------------------------------------------------------------


def floor_summary(result: SizeResult) -> dict[str, Any]:
    """Per level: the best of its rounds and the spread between them (the machine's noise)."""
    by_level: dict[str, list[float]] = {}
    for m in result.floor:
        by_level.setdefault(m.contender, []).append(m.seconds)
    levels = {
        name: {
            "seconds": times,
            "best_s": min(times),
            "spread_pct": 100 * (max(times) - min(times)) / min(times) if min(times) else 0.0,
        }
        for name, times in by_level.items()
    }
    best_name = min(levels, key=lambda name: levels[name]["best_s"])
    sequential = levels.get("floor threads x1", {}).get("best_s")
    return {
        "levels": levels,
        "best": best_name,
        "best_s": levels[best_name]["best_s"],
        "sequential_s": sequential,
        "max_spread_pct": max(level["spread_pct"] for level in levels.values()),
    }


def ratios(result: SizeResult) -> dict[str, float | None]:
    floor = floor_summary(result)
    c, p = result.creditlens, result.peer
    return {
        "creditlens_over_floor": c.wall_s / floor["best_s"] if c else None,
        "creditlens_ledger_step_over_floor": (c.inner_s or 0) / floor["best_s"] if c else None,
        "dlt_over_creditlens": p.wall_s / c.wall_s if p and c else None,
    }


def dlt_ratio_text(result: SizeResult, ratio: float) -> str:
    """dlt/creditlens as printed: ``>=`` when dlt was stopped at its bound (a lower bound)."""
    bound = ">= " if result.peer and result.peer.stopped else ""
    return f"{bound}{ratio:.1f}x"


def targets(results: list[SizeResult]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for result in results:
        r = ratios(result)
        n = result.entries_requested
        if r["creditlens_over_floor"] is not None:
            out.append(
                _target(
                    f"[{n}] creditlens within {CREDITLENS_VS_FLOOR}x of the floor's best",
                    f"{r['creditlens_over_floor']:.2f}x",
                    r["creditlens_over_floor"] <= CREDITLENS_VS_FLOOR,
                )
            )
        if r["dlt_over_creditlens"] is not None:
            # A stopped dlt's ratio is a lower bound: it passes only if the bound already does.
            out.append(
                _target(
                    f"[{n}] dlt at least {DLT_VS_CREDITLENS:.0f}x slower than creditlens",
                    dlt_ratio_text(result, r["dlt_over_creditlens"]),
                    r["dlt_over_creditlens"] >= DLT_VS_CREDITLENS,
                )
            )
        if result.creditlens and n >= RSS_LIMIT_AT:
            rss = result.creditlens.peak_rss_mb
            out.append(
                _target(
                    f"[{n}] creditlens peak RSS under {RSS_LIMIT_MB:.0f} MB",
                    f"{rss:.0f} MB",
                    rss < RSS_LIMIT_MB,
                )
            )
    sized = sorted((r for r in results if r.creditlens), key=lambda r: r.entries)
    if len(sized) >= 2 and sized[0].entries < sized[-1].entries:
        small, big = sized[0], sized[-1]
        assert small.creditlens and big.creditlens
        exponent = math.log(big.creditlens.peak_rss_mb / small.creditlens.peak_rss_mb) / math.log(
            big.entries / small.entries
        )
        out.append(
            _target(
                f"creditlens peak RSS not linear in N (RSS ~ N^b, b < {RSS_GROWTH_EXPONENT})",
                f"b = {exponent:.2f} ({small.creditlens.peak_rss_mb:.0f} -> "
                f"{big.creditlens.peak_rss_mb:.0f} MB for {small.entries} -> {big.entries})",
                exponent < RSS_GROWTH_EXPONENT,
            )
        )
    for result in results:
        out.append(
            _target(
                f"[{result.entries_requested}] every contender saw the same entries",
                f"{result.entries} entries" if not result.problems else "; ".join(result.problems),
                not result.problems,
            )
        )
    return out


def _target(name: str, measured: str, passed: bool) -> dict[str, Any]:
    return {"target": name, "measured": measured, "passed": passed}


def machine() -> dict[str, Any]:
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    total_kb = next((int(line.split()[1]) for line in meminfo if line.startswith("MemTotal")), 0)
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "memory_gb": round(total_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "loadavg_start": list(os.getloadavg()),
    }


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


# --- output --------------------------------------------------------------------------------


def table(results: list[SizeResult]) -> str:
    header = (
        f"{'entries':>9}  {'contender':<20} {'time s':>9} {'entries/s':>11} "
        f"{'peak RSS MB':>12}  note"
    )
    lines = [header, "-" * len(header)]
    for result in results:
        floor = floor_summary(result)
        for name, level in floor["levels"].items():
            rss = max(m.peak_rss_mb for m in result.floor if m.contender == name)
            rounds = " / ".join(f"{s:.2f}" for s in level["seconds"])
            pages = next(m.detail["pages"] for m in result.floor if m.contender == name)
            best = " <- best" if name == floor["best"] else ""
            lines.append(
                f"{result.entries:>9}  {name:<20} {level['best_s']:>9.2f} "
                f"{result.entries / level['best_s']:>11,.0f} {rss:>12.0f}  "
                f"{pages} requests; rounds {rounds} (spread {level['spread_pct']:.0f}%){best}"
            )
        for m in (result.creditlens, result.peer):
            if m is None:
                continue
            note = f"whole process; own step {m.inner_s:.2f}s" if m.inner_s else "whole process"
            if m.stopped:
                note = f"{m.stopped}: a lower bound"
            if "pages" in m.detail:
                note += f"; {m.detail['windows']} windows, {m.detail['pages']} requests"
            note += f"; RSS 1 process {m.kernel_peak_rss_mb:.0f}, tree {m.tree_peak_rss_mb:.0f}"
            rate = f"{'-':>11}" if m.stopped else f"{result.entries / m.wall_s:>11,.0f}"
            lines.append(
                f"{result.entries:>9}  {m.contender:<20} {m.wall_s:>9.2f} "
                f"{rate} {m.peak_rss_mb:>12.0f}  {note}"
            )
        r = ratios(result)
        parts = [f"creditlens/floor {r['creditlens_over_floor']:.2f}x"]
        parts.append(f"(ledger step/floor {r['creditlens_ledger_step_over_floor']:.2f}x)")
        if r["dlt_over_creditlens"] is not None:
            parts.append(f"dlt/creditlens {dlt_ratio_text(result, r['dlt_over_creditlens'])}")
        else:
            parts.append("dlt skipped")
        lines.append(f"{'':>9}  ratios: " + ", ".join(parts))
        lines.append(
            f"{'':>9}  simulator: started in {result.simulator_startup_s:.1f}s, "
            f"peak RSS {result.simulator_peak_rss_mb:.0f} MB; windows {', '.join(result.windows)}"
        )
    return "\n".join(lines)


def to_json(results: list[SizeResult], info: dict[str, Any]) -> dict[str, Any]:
    sizes = []
    for result in results:
        entry = asdict(result)
        entry["floor_summary"] = floor_summary(result)
        entry["ratios"] = ratios(result)
        for key in ("creditlens", "peer"):
            m = getattr(result, key)
            if m is not None:
                entry[key]["entries_per_s"] = None if m.stopped else result.entries / m.wall_s
        sizes.append(entry)
    return {"machine": info, "sizes": sizes, "targets": targets(results)}


# --- command -------------------------------------------------------------------------------


def _sizes(text: str) -> list[int]:
    sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    if not sizes or any(n < 100 for n in sizes):
        raise argparse.ArgumentTypeError("sizes are whole numbers of at least 100")
    return sizes


def _levels(text: str) -> list[str]:
    levels = [part.strip() for part in text.split(",") if part.strip()]
    for level in levels:
        kind = next((k for k in ("async", "procs") if level.startswith(k)), "")
        if not level.removeprefix(kind).isdigit():
            raise argparse.ArgumentTypeError(
                f"floor level {level!r}: a thread count, asyncN or procsN"
            )
    return levels


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ingestion", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--entries", type=_sizes, default=[200_000], help="N, or sizes side by side: 200000,1000000"
    )
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--skip-peer", action="store_true", help="leave dlt out")
    parser.add_argument(
        "--peer-max-rss-mb",
        type=float,
        default=PEER_MAX_RSS_MB,
        help="stop dlt once its processes hold this much (its time so far is a lower bound)",
    )
    parser.add_argument("--dlt-python", help="an interpreter with dlt[duckdb] (default: own venv)")
    parser.add_argument(
        "--floor-levels",
        type=_levels,
        default=list(FLOOR_LEVELS),
        help="thread counts, asyncN and procsN (default 1,2,4,8,async8,procs2)",
    )
    parser.add_argument(
        "--floor-repeats", type=int, default=2, help="rounds of the floor (default 2)"
    )
    parser.add_argument("--now", default=DEFAULT_NOW, help="the simulated now (fixes the data)")
    parser.add_argument(
        "--history-days",
        type=int,
        default=HISTORY_DAYS,
        help="days of history the N entries spread over (default 730: two API windows)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    return parser.parse_args(argv)


def use_bytecode_cache() -> None:
    """Gives our child processes compiled bytecode, as any installed package has.

    Where PYTHONDONTWRITEBYTECODE is set and the virtualenv holds no .pyc (uv does not compile by
    default), every child would compile Dagster and polars from source, seconds a user pays once.
    The cache lives outside the repository and the virtualenv; one untimed import fills it.
    """
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(PYCACHE))
    subprocess.run([sys.executable, "-c", WARM_IMPORTS], cwd=ROOT, check=True, timeout=600)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    use_bytecode_cache()
    now = datetime.fromisoformat(args.now)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    dlt_python = None if args.skip_peer else ensure_dlt_python(args.dlt_python)
    info = machine()
    print(
        f"machine: {info['cores']} cores ({info['cores_usable']} usable), {info['memory_gb']} GB, "
        f"{info['cpu']}, Python {info['python']}, {info['date']}, "
        f"load {' '.join(f'{x:.2f}' for x in info['loadavg_start'])}"
    )
    scratch = Path(tempfile.mkdtemp(prefix="creditlens-bench-"))
    results: list[SizeResult] = []
    try:
        for entries in args.entries:
            results.append(
                measure_size(
                    entries,
                    now,
                    scratch / str(entries),
                    levels=args.floor_levels,
                    repeats=max(1, args.floor_repeats),
                    dlt_python=dlt_python,
                    peer_max_rss_mb=args.peer_max_rss_mb,
                    history_days=args.history_days,
                )
            )
    finally:
        if args.keep:
            print(f"scratch kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    info["loadavg_end"] = list(os.getloadavg())
    print()
    print(table(results))
    print()
    for target in targets(results):
        mark = "pass" if target["passed"] else "MISS"
        print(f"  {mark}  {target['target']}: {target['measured']}")
    if args.out:
        args.out.write_text(json.dumps(to_json(results, info), indent=2) + "\n", encoding="utf-8")
        print(f"\nfigures written to {args.out}")
    return 1 if any(r.problems for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
