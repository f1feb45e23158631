"""Syncing at the speed a real network allows: round trips, per-key rate limits, many accounts.

On loopback a sync is bound by CPU; against the real API it is bound by round trips and by each
key's rate limit, and the line to beat is what the network allows. Every benchmark here puts the
simulator 80 ms away (``--latency-ms``), some behind a per-key token bucket (``--rate-limit``),
and measures creditlens against that line in one run:

``rate-limited``  a backfill against its rate floor, requests needed / rate (the pages the raw
                  floor needs at pageSize 100), with dlt's rest_api syncing the same company AT
                  THE SAME TIME with another key (the limit is per key; both wait on the network),
                  bounded in time: stopped, its time so far is a lower bound.
``unlimited``     no limit: against the raw httpx floor at several concurrency levels.
``accounts``      N companies in one simulator, ONE `creditlens sync` of them all (an accounts
                  file), against the slowest account's rate floor; peak RSS of its process tree.
``daily``         an up-to-date warehouse (backfilled at loopback speed), the next day appears,
                  then the daily sync (7-day lookback) at 80 ms, end to end and phase by phase.

    python -m benchmarks.network rate-limited [--entries 1000000] [--skip-peer] [--out FILE]
    python -m benchmarks.network unlimited [--entries 1000000] [--floor-levels 4,16,...]
    python -m benchmarks.network accounts [--accounts 50] [--entries 20000]
    python -m benchmarks.network daily [--accounts 1] [--entries 1000000]

The simulator counts what it answered per key (benchmarks/peers/steered_simulator.py): every
request, 429 and error figure below is the server's, beside the client's own where it reports
one. Prints the machine, a markdown table, the ratios and targets; ``--out`` writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.ingestion import (
    DEFAULT_NOW,
    PEER_MAX_RSS_MB,
    Measured,
    _levels,
    machine,
    run_floor,
    use_bytecode_cache,
)
from benchmarks.peers.creditlens_sync import (
    LedgerLine,
    SyncRun,
    accounts_environment,
    ledger_lines,
    rows_per_account,
    run_sync,
    sync_environment,
    sync_runs,
)
from benchmarks.peers.dlt_venv import ensure_dlt_python, peer_command, peer_environment
from benchmarks.peers.measured import ChildOverMemory, ChildRun, ChildTimeout, run_child
from benchmarks.peers.raw_floor import count_pages
from benchmarks.peers.simulated_company import (
    COMPANY,
    HISTORY_DAYS,
    KeyTraffic,
    SimulatedCompany,
    SimulatedPlatform,
    simulated_platform,
)
from pipelines.api.settings import ApiOptions
from simulator.network import NetworkSpec, parse_latency, parse_rate

SYNC_TIMEOUT_S = 3600
LATENCY_MS = "80"
RATE_LIMIT = "20/s"
UNLIMITED_FLOOR_LEVELS = ("4", "16", "32", "64", "async64")

RATE_LIMITED_VS_FLOOR = 1.15  # creditlens within 1.15x of the rate floor
UNLIMITED_VS_FLOOR = 1.5  # creditlens within 1.5x of the best raw floor
ACCOUNTS_VS_FLOOR = 1.3  # one sync of N accounts within 1.3x of the slowest account's floor
ACCOUNTS_RSS_MB = 1024.0  # ... in under 1 GB for the whole process tree
DAILY_LIMIT_S = 5.0  # a daily sync end to end
# dlt beside creditlens is stopped after this many rate floors (its time so far a lower bound):
# sequential at 80 ms it needs longer than the floor, and the run must not wait for it forever.
PEER_FLOORS = 2.0
PEER_MIN_S = 60.0
COUNT_THREADS = 16  # page 1 of every company's windows, counted side by side

JOBS = ("ledger_sync", "snapshot_sync", "reconciliation_run")  # a sync's runs, in order
STAMP = re.compile(r"^\[\s*([\d.]+)s\] (.*)$", re.MULTILINE)


# --- shared ----------------------------------------------------------------------------------


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


@dataclass
class Synced:
    """A `creditlens sync` child and what it left: its lines, the warehouse's records, the
    server's count for its keys (``traffic``, by account)."""

    run: ChildRun
    lines: dict[str | None, LedgerLine]
    runs: dict[str, SyncRun]
    rows: dict[str, int]
    traffic: dict[str, KeyTraffic]
    errors: list[str]  # the command's own error lines (an account that failed)

    def line(self, account: str, single: bool) -> LedgerLine | None:
        return self.lines.get(None if single else account)

    @property
    def served(self) -> int:
        return sum(t.served for t in self.traffic.values())

    @property
    def rate_limited(self) -> int:
        return sum(t.rate_limited for t in self.traffic.values())

    @property
    def server_errors(self) -> int:
        return sum(t.errors for t in self.traffic.values())


def synced(
    run: ChildRun,
    workdir: Path,
    traffic: dict[tuple[str, str], KeyTraffic],
    accounts: Sequence[str],
) -> Synced:
    warehouse = workdir / "warehouse.duckdb"
    errors = [
        line.removeprefix("creditlens: error: ")
        for line in run.stderr.splitlines()
        if line.startswith("creditlens: error:")
    ]
    if run.returncode != 0 and not errors:
        errors = run.stderr.strip().splitlines()[-5:] or [f"exit code {run.returncode}"]
    return Synced(
        run=run,
        lines=ledger_lines(run.stdout),
        runs=sync_runs(warehouse),
        rows=rows_per_account(warehouse),
        traffic={a: traffic.get((a, "creditlens"), KeyTraffic()) for a in accounts},
        errors=errors,
    )


def check_accounts(result: Synced, expected: dict[str, int], single: bool) -> list[str]:
    """Every account fetched what the floor counted, and landed all of it exactly once."""
    problems = [f"creditlens: {error}" for error in result.errors]
    if result.run.returncode != 0:
        problems.append(f"creditlens exited with {result.run.returncode}")
    for account, entries in expected.items():
        line = result.line(account, single)
        if line is None:
            problems.append(f"creditlens: no ledger line for {account}")
            continue
        if line.fetched != entries:
            problems.append(f"creditlens: {account} fetched {line.fetched}, the floor {entries}")
        if line.landed + line.quarantined != line.fetched:
            problems.append(f"creditlens: {account} fetched != landed + quarantined")
    return problems


def check_rows(result: Synced, expected: dict[str, int]) -> list[str]:
    return [
        f"creditlens: the warehouse holds {result.rows.get(a, 0)} rows of {a}, the API {n}"
        for a, n in expected.items()
        if result.rows.get(a, 0) != n
    ]


def count_all(
    platform: SimulatedPlatform, windows: dict[str, list[str]], label: str = "floor"
) -> dict[str, tuple[int, int]]:
    """Per company: (entries, requests the floor needs) in its windows, page 1 of each only."""

    def one(company: str) -> tuple[int, int]:
        return count_pages(platform.base_url, platform.keys[company][label], windows[company])

    with ThreadPoolExecutor(min(COUNT_THREADS, len(windows))) as pool:
        return dict(zip(windows, pool.map(one, windows), strict=True))


def together(*jobs: Callable[[], Any]) -> list[Any]:
    """Runs the jobs (each waiting on a child process) at the same time; their results in order."""
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(job) for job in jobs]
        return [f.result() for f in futures]


def company_names(count: int) -> list[str]:
    if count == 1:
        return [COMPANY]
    width = max(2, len(str(count)))
    return [f"company-{n:0{width}d}" for n in range(1, count + 1)]


def sync_env(platform: SimulatedPlatform, workdir: Path, concurrency: int | None) -> dict[str, str]:
    """One account: the CREDITLENS_* variables as a user sets them; several: an accounts file."""
    names = platform.companies
    if len(names) == 1:
        return sync_environment(
            platform.base_url,
            platform.keys[names[0]]["creditlens"],
            names[0],
            workdir,
            platform.first,
        )
    accounts = [(name, platform.keys[name]["creditlens"]) for name in names]
    return accounts_environment(
        platform.base_url, accounts, workdir, platform.first, concurrency=concurrency or len(names)
    )


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


def target(name: str, measured: str, passed: bool) -> dict[str, Any]:
    return {"target": name, "measured": measured, "passed": passed}


def network_spec(latency: str, rate: str | None, burst: int | None) -> NetworkSpec:
    mean, jitter = parse_latency(latency)
    rate_per_s = parse_rate(rate) if rate else None
    return NetworkSpec(latency_ms=mean, jitter_ms=jitter, rate_limit_per_s=rate_per_s, burst=burst)


def section(spec: NetworkSpec) -> dict[str, Any]:
    """The scenario's ``network:`` section for ``spec``."""
    return spec.model_dump(exclude_defaults=True)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _int(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


# --- rate-limited ----------------------------------------------------------------------------


def run_peer_bounded(
    company: SimulatedCompany,
    dlt_python: Path,
    workdir: Path,
    *,
    max_s: float,
    max_rss_mb: float | None,
) -> Measured:
    """dlt's rest_api over ``company``'s windows with its key, stopped at ``max_s`` or past
    ``max_rss_mb``: then its time so far is kept, a lower bound (``stopped``). A dlt that fails
    is recorded as such (``detail["failed"]``) rather than ending the creditlens run beside it."""
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
    except RuntimeError as stopped:
        if not isinstance(stopped, ChildOverMemory | ChildTimeout):
            return Measured(
                "dlt rest_api",
                0.0,
                0.0,
                0,
                stopped=str(stopped).splitlines()[0],
                detail={"failed": str(stopped)},
            )
        why = (
            f"stopped past {stopped.limit_mb:.0f} MB"
            if isinstance(stopped, ChildOverMemory)
            else f"stopped at its {max_s:.0f}s bound"
        )
        return Measured(
            contender="dlt rest_api",
            wall_s=stopped.wall_s,
            peak_rss_mb=stopped.peak_rss_mb,
            tree_peak_rss_mb=stopped.peak_rss_mb,
            entries=0,
            stopped=f"{why} after {stopped.wall_s:.1f}s",
        )
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    detail = {"dlt_version": figures["dlt_version"], "amount_type": figures["amount_type"]}
    return Measured.of_run("dlt rest_api", run, figures["rows"], figures["seconds"], detail)


def rate_limited(args: argparse.Namespace, scratch: Path) -> Report:
    spec = network_spec(args.latency_ms, args.rate_limit, args.burst)
    rate = spec.rate_limit_per_s
    if rate is None:
        raise SystemExit("rate-limited needs a rate limit (--rate-limit N/s)")
    dlt_python = None if args.skip_peer else ensure_dlt_python(args.dlt_python)
    with simulated_platform(
        [COMPANY],
        args.entries,
        args.now,
        scratch / "simulator",
        labels=("creditlens", "peer", "floor"),
        network=section(spec),
        history_days=args.history_days,
    ) as platform:
        print(f"simulator ready in {platform.startup_s:.1f}s: {platform.network}")
        windows = [str(w) for w in platform.windows]
        entries, needed = count_all(platform, {COMPANY: windows})[COMPANY]
        floor_s = needed / rate
        peer_max_s = args.peer_max_s or max(PEER_MIN_S, PEER_FLOORS * floor_s)
        print(f"{entries} entries, {needed} requests needed: rate floor {floor_s:.1f}s")
        workdir = scratch / "creditlens"
        env = sync_env(platform, workdir, None)
        since = ["--since", platform.first.isoformat(), "--until", platform.last.isoformat()]

        def creditlens() -> ChildRun:
            return run_sync(env, workdir, since, timeout_s=args.sync_timeout_s)

        def peer() -> Measured | None:
            if dlt_python is None:
                return None
            return run_peer_bounded(
                platform.company(COMPANY, "peer"),
                dlt_python,
                scratch / "dlt",
                max_s=peer_max_s,
                max_rss_mb=args.peer_max_rss_mb,
            )

        run, dlt = together(creditlens, peer)
        traffic = platform.traffic()
    result = synced(run, workdir, traffic, [COMPANY])
    problems = check_accounts(result, {COMPANY: entries}, single=True)
    problems += check_rows(result, {COMPANY: entries})
    if dlt is not None and dlt.stopped is None and dlt.entries != entries:
        problems.append(f"dlt loaded {dlt.entries} rows, the floor counted {entries}")
    if dlt is not None and "failed" in dlt.detail:
        problems.append(f"dlt: {dlt.detail['failed']}")
    line = result.line(COMPANY, single=True)
    own = result.runs.get(COMPANY)
    mine = result.traffic[COMPANY]
    peer_traffic = traffic.get((COMPANY, "peer"), KeyTraffic())
    own_floor_s = mine.served / rate
    wall = run.wall_s
    rows = [
        Row(
            "rate floor (requests needed / rate)",
            floor_s,
            needed,
            vs_floor=1.0,
            note=f"{len(windows)} windows at pageSize 100, {rate:g} requests/s",
        ),
        Row(
            "creditlens sync",
            wall,
            mine.served,
            mine.rate_limited,
            run.peak_rss_mb,
            wall / floor_s,
            note=_creditlens_note(line, own, own_floor_s, spec.latency_ms),
        ),
    ]
    dlt_failed = dlt is not None and "failed" in dlt.detail
    bounded = dlt is not None and dlt.stopped is not None and not dlt_failed
    if dlt is not None:
        rows.append(
            Row(
                "dlt rest_api (same time, own key)",
                dlt.wall_s,
                peer_traffic.served,
                peer_traffic.rate_limited,
                dlt.peak_rss_mb,
                dlt.wall_s / floor_s,
                note=f"{dlt.stopped}: a lower bound" if bounded else dlt.stopped or "whole process",
                lower_bound=bounded,
            )
        )
    failed = result.server_errors + (0 if run.returncode == 0 else 1)
    figures: dict[str, Any] = {
        "rate_per_s": rate,
        "burst": spec.effective_burst,
        "requests_needed": needed,
        "rate_floor_s": floor_s,
        "creditlens_wall_s": wall,
        "creditlens_over_rate_floor": wall / floor_s,
        "creditlens_requests_served": mine.served,
        "creditlens_rate_limited": mine.rate_limited,
        "creditlens_server_errors": mine.errors,
        "creditlens_ledger_requests": own.requests if own else None,
        "creditlens_ledger_retries": own.retries if own else None,
        "creditlens_reported": line.reported if line else {},
        "creditlens_in_flight": in_flight(own, spec.latency_ms),
        "floor_with_creditlens_requests_s": own_floor_s,
        "creditlens_over_own_request_floor": wall / own_floor_s if own_floor_s else None,
        "peer": asdict(dlt) if dlt else None,
        "peer_max_s": peer_max_s if dlt else None,
        "peer_requests_served": peer_traffic.served if dlt else None,
        "peer_rate_limited": peer_traffic.rate_limited if dlt else None,
        "dlt_over_creditlens": dlt.wall_s / wall if dlt else None,
        "dlt_lower_bound": bounded,
        "simulator_peak_rss_mb": platform.peak_rss_mb,
    }
    targets = [
        target(
            f"creditlens within {RATE_LIMITED_VS_FLOOR}x of the rate floor",
            f"{wall / floor_s:.2f}x ({wall:.1f}s against {floor_s:.1f}s)",
            wall / floor_s <= RATE_LIMITED_VS_FLOOR,
        ),
        target(
            "zero failed requests after retries",
            f"exit {run.returncode}, {mine.errors} error answers, "
            f"{mine.rate_limited} 429s absorbed",
            failed == 0 and not problems,
        ),
    ]
    if dlt is not None and not dlt_failed:
        bound = ">= " if bounded else ""
        targets.append(
            target(
                "dlt beside it (for the record)",
                f"dlt/creditlens {bound}{dlt.wall_s / wall:.2f}x",
                True,
            )
        )
    return Report("rate-limited", platform.network, entries, 1, rows, figures, targets, problems)


def _creditlens_note(
    line: LedgerLine | None, own: SyncRun | None, own_floor_s: float | None, latency_ms: float
) -> str:
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


# --- unlimited -------------------------------------------------------------------------------


def unlimited(args: argparse.Namespace, scratch: Path) -> Report:
    spec = network_spec(args.latency_ms, None, None)
    floor: list[Measured] = []
    with simulated_platform(
        [COMPANY],
        args.entries,
        args.now,
        scratch / "simulator",
        labels=("creditlens", "floor"),
        network=section(spec),
        history_days=args.history_days,
    ) as platform:
        print(f"simulator ready in {platform.startup_s:.1f}s: {platform.network}")
        reader = platform.company(COMPANY, "floor")
        for round_ in range(1, args.floor_repeats + 1):
            for level in args.floor_levels:
                m = run_floor(reader, level, round_, scratch / "floor")
                print(f"{m.contender} round {round_}: {m.seconds:.2f}s")
                floor.append(m)
        workdir = scratch / "creditlens"
        since = ["--since", platform.first.isoformat(), "--until", platform.last.isoformat()]
        run = run_sync(
            sync_env(platform, workdir, None), workdir, since, timeout_s=args.sync_timeout_s
        )
        print(f"creditlens sync: {run.wall_s:.2f}s")
        traffic = platform.traffic()
    entries = floor[0].entries
    problems = [
        f"{m.contender} round {m.detail['round']} saw {m.entries} entries, not {entries}"
        for m in floor
        if m.entries != entries
    ]
    result = synced(run, workdir, traffic, [COMPANY])
    problems += check_accounts(result, {COMPANY: entries}, single=True)
    problems += check_rows(result, {COMPANY: entries})
    best: dict[str, Measured] = {}
    for m in floor:
        if m.contender not in best or m.seconds < best[m.contender].seconds:
            best[m.contender] = m
    fastest = min(best.values(), key=lambda m: m.seconds)
    line = result.line(COMPANY, single=True)
    own = result.runs.get(COMPANY)
    mine = result.traffic[COMPANY]
    rows = []
    for name, m in best.items():
        rounds = " / ".join(f"{x.seconds:.2f}" for x in floor if x.contender == name)
        rows.append(
            Row(
                name,
                m.seconds,
                m.detail["pages"],
                None,
                m.peak_rss_mb,
                m.seconds / fastest.seconds,
                note=f"rounds {rounds}" + ("; best" if m is fastest else ""),
            )
        )
    ratio = run.wall_s / fastest.seconds
    rows.append(
        Row(
            "creditlens sync",
            run.wall_s,
            mine.served,
            mine.rate_limited,
            run.peak_rss_mb,
            ratio,
            note=_creditlens_note(line, own, None, spec.latency_ms),
        )
    )
    figures = {
        "floor_best": fastest.contender,
        "floor_best_s": fastest.seconds,
        "floor": [asdict(m) for m in floor],
        "creditlens_wall_s": run.wall_s,
        "creditlens_over_floor": ratio,
        "creditlens_ledger_step_over_floor": line.ledger_s / fastest.seconds if line else None,
        "creditlens_requests_served": mine.served,
        "creditlens_ledger_requests": own.requests if own else None,
        "creditlens_reported": line.reported if line else {},
        "creditlens_concurrency": reported_concurrency(line),
        "creditlens_in_flight": in_flight(own, spec.latency_ms),
        "creditlens_peak_rss_mb": run.peak_rss_mb,
        "simulator_peak_rss_mb": platform.peak_rss_mb,
    }
    flight = figures["creditlens_in_flight"]
    targets = [
        target(
            f"creditlens within {UNLIMITED_VS_FLOOR}x of the best raw floor",
            f"{ratio:.2f}x ({run.wall_s:.1f}s against {fastest.contender} {fastest.seconds:.1f}s)",
            ratio <= UNLIMITED_VS_FLOOR,
        ),
        target(
            "the concurrency creditlens converged to (for the record)",
            f"{figures['creditlens_concurrency']}; measured {_fmt(flight, 1)} in flight",
            True,
        ),
    ]
    return Report("unlimited", platform.network, entries, 1, rows, figures, targets, problems)


# --- accounts --------------------------------------------------------------------------------


def accounts(args: argparse.Namespace, scratch: Path) -> Report:
    spec = network_spec(args.latency_ms, args.rate_limit, args.burst)
    rate = spec.rate_limit_per_s
    if rate is None:
        raise SystemExit("accounts needs a rate limit (--rate-limit N/s)")
    names = company_names(args.accounts)
    single = len(names) == 1
    with simulated_platform(
        names,
        args.entries,
        args.now,
        scratch / "simulator",
        labels=("creditlens", "floor"),
        network=section(spec),
        history_days=args.history_days,
    ) as platform:
        print(f"simulator ready in {platform.startup_s:.1f}s: {platform.network}")
        windows = [str(w) for w in platform.windows]
        counted = count_all(platform, {name: windows for name in names})
        floors = {name: pages / rate for name, (_, pages) in counted.items()}
        slowest = max(floors, key=lambda name: floors[name])
        print(f"slowest account's rate floor {floors[slowest]:.1f}s ({slowest})")
        workdir = scratch / "creditlens"
        env = sync_env(platform, workdir, args.account_concurrency)
        since = ["--since", platform.first.isoformat(), "--until", platform.last.isoformat()]
        run = run_sync(env, workdir, since, timeout_s=args.sync_timeout_s, phases=bool(args.phases))
        print(f"creditlens sync of {len(names)} accounts: {run.wall_s:.2f}s")
        traffic = platform.traffic()
    expected = {name: entries for name, (entries, _) in counted.items()}
    result = synced(run, workdir, traffic, names)
    problems = check_accounts(result, expected, single) + check_rows(result, expected)
    floor_s = floors[slowest]
    ratio = run.wall_s / floor_s
    own_floor_s = max(t.served for t in result.traffic.values()) / rate
    steps = sorted(
        (line.ledger_s, name) for name in names if (line := result.line(name, single)) is not None
    )
    rows = [
        Row(
            "slowest account's rate floor",
            floor_s,
            counted[slowest][1],
            vs_floor=1.0,
            note=f"{slowest}: {counted[slowest][1]} requests needed / {rate:g} per s",
        ),
        Row(
            f"creditlens sync, {len(names)} accounts, one process",
            run.wall_s,
            result.served,
            result.rate_limited,
            run.peak_rss_mb,
            ratio,
            note=f"whole process tree; the busiest key's requests / rate: {own_floor_s:.1f}s",
        ),
    ]
    if steps:
        median = statistics.median(s for s, _ in steps)
        rows.append(
            Row(
                "accounts' ledger steps",
                steps[-1][0],
                note=f"fastest {steps[0][0]:.1f}s ({steps[0][1]}), median {median:.1f}s, "
                f"slowest {steps[-1][0]:.1f}s ({steps[-1][1]})",
            )
        )
    per_account = [
        {
            "account": name,
            "entries": expected[name],
            "requests_needed": counted[name][1],
            "rate_floor_s": floors[name],
            "served": result.traffic[name].served,
            "rate_limited": result.traffic[name].rate_limited,
            "errors": result.traffic[name].errors,
            "ledger": asdict(line) if (line := result.line(name, single)) else None,
            "sync_run": asdict(r) if (r := result.runs.get(name)) else None,
        }
        for name in names
    ]
    figures = {
        "rate_per_s": rate,
        "accounts": len(names),
        "account_concurrency": args.account_concurrency or len(names),
        "configured_by": "CREDITLENS_* variables" if single else "accounts file",
        "slowest_account": slowest,
        "slowest_rate_floor_s": floor_s,
        "creditlens_wall_s": run.wall_s,
        "creditlens_over_slowest_floor": ratio,
        "floor_with_busiest_key_requests_s": own_floor_s,
        "creditlens_peak_rss_mb": run.peak_rss_mb,
        "creditlens_tree_peak_rss_mb": run.tree_peak_rss_mb,
        "requests_served": result.served,
        "rate_limited": result.rate_limited,
        "server_errors": result.server_errors,
        "per_account": per_account,
        "simulator_peak_rss_mb": platform.peak_rss_mb,
    }
    targets = [
        target(
            f"one sync of {len(names)} accounts within {ACCOUNTS_VS_FLOOR}x of the slowest "
            "account's rate floor",
            f"{ratio:.2f}x ({run.wall_s:.1f}s against {floor_s:.1f}s)",
            ratio <= ACCOUNTS_VS_FLOOR,
        ),
        target(
            f"peak RSS of the process tree under {ACCOUNTS_RSS_MB:.0f} MB",
            f"{run.peak_rss_mb:.0f} MB",
            run.peak_rss_mb < ACCOUNTS_RSS_MB,
        ),
        target(
            "zero failed requests after retries, every account landed",
            f"exit {run.returncode}, {result.server_errors} error answers, "
            f"{result.rate_limited} 429s absorbed",
            not problems and result.server_errors == 0,
        ),
    ]
    report = Report(
        "accounts",
        platform.network,
        sum(expected.values()),
        len(names),
        rows,
        figures,
        targets,
        problems,
    )
    if len(names) <= 10:
        report.extra_tables.append(_accounts_table(per_account))
    return report


def _accounts_table(per_account: list[dict[str, Any]]) -> tuple[str, list[str], list[list[str]]]:
    header = ["account", "entries", "rate floor s", "ledger step s", "requests", "429s"]
    rows = [
        [
            a["account"],
            _int(a["entries"]),
            _fmt(a["rate_floor_s"]),
            _fmt(a["ledger"]["ledger_s"] if a["ledger"] else None),
            _int(a["served"]),
            _int(a["rate_limited"]),
        ]
        for a in per_account
    ]
    return "per account", header, rows


# --- daily -----------------------------------------------------------------------------------


def phases(stderr: str, wall_s: float) -> list[dict[str, Any]]:
    """benchmarks/sync_phases.py's stamps as phases, in the order they ended: importing the CLI,
    each ``< name Ns`` (phases nest: a job's run holds its steps), and the time outside the
    stamps (the interpreter starting before them, the process exiting after ``end``). Its
    ``run_job`` stamps do not say which job: the sync runs JOBS in this order, so they are named."""
    out: list[dict[str, Any]] = []
    end = None
    jobs = iter(JOBS)
    for at_text, label in STAMP.findall(stderr):
        at = float(at_text)
        if label == "imported the CLI":
            out.append({"phase": "importing the CLI", "from_s": 0.0, "to_s": at, "took_s": at})
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


def daily(args: argparse.Namespace, scratch: Path) -> Report:
    spec = network_spec(args.latency_ms, args.rate_limit, args.burst)
    names = company_names(args.accounts)
    single = len(names) == 1
    workdir = scratch / "creditlens"
    with simulated_platform(
        names,
        args.entries,
        args.now - timedelta(days=1),
        scratch / "simulator",
        labels=("creditlens", "floor"),
        history_days=args.history_days,
    ) as platform:
        print(f"simulator ready in {platform.startup_s:.1f}s: {platform.network} (backfill)")
        env = sync_env(platform, workdir, args.account_concurrency)
        env["CREDITLENS_LOOKBACK_DAYS"] = str(args.lookback_days)
        since = ["--since", platform.first.isoformat(), "--until", platform.last.isoformat()]
        backfill = run_sync(env, workdir, since, timeout_s=args.sync_timeout_s, name="backfill")
        print(f"backfill of {platform.first}..{platform.last}: {backfill.wall_s:.1f}s")
        backfilled = synced(backfill, workdir, platform.traffic(), names)
        platform.advance_days(1)
        platform.configure_network(section(spec))
        platform.reset_traffic()
        print(f"next day {platform.last}: {platform.network}")
        run = run_sync(
            env,
            workdir,
            ["--until", platform.last.isoformat()],
            timeout_s=args.sync_timeout_s,
            phases=True,
            name="daily",
        )
        print(f"daily sync: {run.wall_s:.2f}s")
        traffic = platform.traffic()
        result = synced(run, workdir, traffic, names)
        ranges = {
            name: [f"{line.first.isoformat()}..{line.last.isoformat()}"]
            for name in names
            if (line := result.line(name, single)) is not None
        }
        read = count_all(platform, ranges) if ranges else {}
        whole = [str(w) for w in platform.windows]
        history = count_all(platform, {name: whole for name in names})
    problems = [f"backfill: {error}" for error in backfilled.errors]
    problems += check_accounts(result, {n: e for n, (e, _) in read.items()}, single)
    missing = [name for name in names if name not in ranges]
    problems += [f"creditlens: no ledger line for {name}" for name in missing]
    total = {name: entries for name, (entries, _) in history.items()}
    problems += check_rows(result, total)
    steps = phases(run.stderr, run.wall_s)
    lines = [result.line(name, single) for name in names]
    found = [line for line in lines if line is not None]
    days = {(line.last - line.first).days + 1 for line in found}
    fetched = sum(line.fetched for line in found)
    pages = sum(line.pages for line in found)
    rows = [
        Row(
            f"daily sync, {len(names)} account{'s' if len(names) > 1 else ''}",
            run.wall_s,
            result.served,
            result.rate_limited,
            run.peak_rss_mb,
            note=f"whole process; {fetched:,} entries in {pages} pages, "
            f"{'/'.join(str(d) for d in sorted(days))} days each; lookback {args.lookback_days}",
        ),
        Row(
            "the backfill before it (loopback, untimed)",
            backfill.wall_s,
            sum(t.served for t in backfilled.traffic.values()),
            None,
            backfill.peak_rss_mb,
            note=f"{sum(backfilled.rows.values()):,} entries up to the day before",
        ),
    ]
    figures = {
        "accounts": len(names),
        "entries_per_account": args.entries,
        "lookback_days": args.lookback_days,
        "daily_wall_s": run.wall_s,
        "daily_peak_rss_mb": run.peak_rss_mb,
        "daily_requests_served": result.served,
        "daily_rate_limited": result.rate_limited,
        "daily_entries_fetched": fetched,
        "daily_pages": pages,
        "ranges": {name: ranges[name][0] for name in ranges},
        "phases": steps,
        "backfill_wall_s": backfill.wall_s,
        "warehouse_entries": sum(result.rows.values()),
        "simulator_peak_rss_mb": platform.peak_rss_mb,
    }
    targets = [
        target(
            f"daily sync end to end under {DAILY_LIMIT_S:.0f}s ({len(names)} account"
            f"{'s' if len(names) > 1 else ''}, {sum(total.values()):,} entries in the warehouse)",
            f"{run.wall_s:.2f}s",
            run.wall_s < DAILY_LIMIT_S,
        ),
        target(
            "every day read again was fetched whole, the warehouse holds the API's entries",
            "yes" if not problems else "; ".join(problems[:3]),
            not problems,
        ),
    ]
    report = Report(
        "daily", platform.network, sum(total.values()), len(names), rows, figures, targets, problems
    )
    report.extra_tables.append(
        (
            "phases of the daily sync (benchmarks/sync_phases.py's stamps)",
            ["phase", "from s", "to s", "took s"],
            [[p["phase"], *(_fmt(p[k]) for k in ("from_s", "to_s", "took_s"))] for p in steps],
        )
    )
    return report


# --- output ----------------------------------------------------------------------------------


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
            (">= " if row.lower_bound else "") + _fmt(row.seconds),
            _int(row.requests),
            _int(row.rate_limited),
            _fmt(row.peak_rss_mb, 0),
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


# --- command ---------------------------------------------------------------------------------


def _whole(text: str) -> int:
    value = int(text.replace("_", ""))
    if value < 1:
        raise argparse.ArgumentTypeError("a whole number of at least 1")
    return value


def _now(text: str) -> datetime:
    now = datetime.fromisoformat(text)
    return now if now.tzinfo else now.replace(tzinfo=UTC)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.network", description=__doc__.splitlines()[0]
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", type=Path, help="write the figures as JSON here")
    common.add_argument("--keep", action="store_true", help="keep the scratch directory")
    common.add_argument(
        "--phases",
        action="store_true",
        help="accounts: run the sync through benchmarks/sync_phases.py (stamps on stderr)",
    )
    common.add_argument("--now", type=_now, default=_now(DEFAULT_NOW), help="the simulated now")
    common.add_argument(
        "--history-days",
        type=_whole,
        default=HISTORY_DAYS,
        help="days each company's entries spread over (default 730: two API windows)",
    )
    common.add_argument(
        "--latency-ms",
        default=LATENCY_MS,
        metavar="MEAN[,JITTER]",
        help="the round trip every request takes (default 80)",
    )
    common.add_argument("--sync-timeout-s", type=float, default=SYNC_TIMEOUT_S)
    limited = argparse.ArgumentParser(add_help=False)
    limited.add_argument("--burst", type=_whole, help="the bucket's size (default: one second's)")
    commands = parser.add_subparsers(dest="benchmark", required=True)

    rate = commands.add_parser("rate-limited", parents=[common, limited], help="backfill vs rate")
    rate.add_argument("--entries", type=_whole, default=1_000_000)
    rate.add_argument("--rate-limit", default=RATE_LIMIT, metavar="N/s")
    rate.add_argument("--skip-peer", action="store_true", help="leave dlt out")
    rate.add_argument("--dlt-python", help="an interpreter with dlt[duckdb] (default: own venv)")
    rate.add_argument(
        "--peer-max-s",
        type=float,
        help=f"stop dlt after this long (default {PEER_FLOORS:g} rate floors, at least "
        f"{PEER_MIN_S:.0f}s); its time so far is then a lower bound",
    )
    rate.add_argument("--peer-max-rss-mb", type=float, default=PEER_MAX_RSS_MB)

    free = commands.add_parser("unlimited", parents=[common], help="no limit: vs the raw floor")
    free.add_argument("--entries", type=_whole, default=1_000_000)
    free.add_argument(
        "--floor-levels",
        type=_levels,
        default=list(UNLIMITED_FLOOR_LEVELS),
        help="thread counts, asyncN and procsN (default 4,16,32,64,async64)",
    )
    free.add_argument("--floor-repeats", type=_whole, default=1)

    many = commands.add_parser("accounts", parents=[common, limited], help="N accounts, one sync")
    many.add_argument("--accounts", type=_whole, default=50)
    many.add_argument("--entries", type=_whole, default=20_000, help="entries per account")
    many.add_argument("--rate-limit", default=RATE_LIMIT, metavar="N/s")
    many.add_argument("--account-concurrency", type=_whole, help="default: every account at once")

    day = commands.add_parser("daily", parents=[common, limited], help="the next day's sync")
    day.add_argument("--accounts", type=_whole, default=1)
    day.add_argument("--entries", type=_whole, default=1_000_000, help="entries per account")
    day.add_argument("--rate-limit", default=None, metavar="N/s", help="default: none")
    day.add_argument("--lookback-days", type=int, default=7)
    day.add_argument("--account-concurrency", type=_whole, help="default: every account at once")
    return parser.parse_args(argv)


BENCHMARKS: dict[str, Callable[[argparse.Namespace, Path], Report]] = {
    "rate-limited": rate_limited,
    "unlimited": unlimited,
    "accounts": accounts,
    "daily": daily,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        network_spec(
            args.latency_ms, getattr(args, "rate_limit", None), getattr(args, "burst", None)
        )
    except ValueError as error:
        print(f"bad network option: {error}", file=sys.stderr)
        return 2
    use_bytecode_cache()
    info = machine()
    print(
        f"machine: {info['cores']} cores ({info['cores_usable']} usable), {info['memory_gb']} GB, "
        f"{info['cpu']}, Python {info['python']}, {info['date']}, "
        f"load {' '.join(f'{x:.2f}' for x in info['loadavg_start'])}"
    )
    scratch = Path(tempfile.mkdtemp(prefix=f"creditlens-network-{args.benchmark}-"))
    try:
        report = BENCHMARKS[args.benchmark](args, scratch)
    finally:
        if args.keep:
            print(f"scratch kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    info["loadavg_end"] = list(os.getloadavg())
    print(
        f"\n{report.benchmark}: {report.network}; {report.accounts} account(s), "
        f"{report.entries:,} entries\n"
    )
    print(table(report))
    print()
    for t in report.targets:
        print(f"  {'pass' if t['passed'] else 'MISS'}  {t['target']}: {t['measured']}")
    for problem in report.problems:
        print(f"  problem: {problem}")
    if args.out:
        args.out.write_text(json.dumps(to_json(report, info), indent=2, default=str) + "\n")
        print(f"\nfigures written to {args.out}")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
