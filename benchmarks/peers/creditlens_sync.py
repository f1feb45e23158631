"""creditlens as a user runs it: `creditlens sync --since FIRST --until LAST`, end to end.

A fresh warehouse per run, configured only through CREDITLENS_* variables, no DAGSTER_HOME: the
runs are recorded in the default persistent instance beside the warehouse, as a first run on a
laptop (``extra_env`` may choose another, as benchmarks/dagster_instance.py does). The whole
process is timed, Python start-up, Dagster, snapshots and the analyst copy included; the
ledger's own figure is read back from the summary line the command prints.

Many accounts are configured as an agency would: an accounts file (``CREDITLENS_CONFIG``), each
account naming the variable that holds its key (``accounts_environment``). The command then
prints one line per account, prefixed by its name; ``ledger_lines`` reads both forms, and
``sync_runs`` reads what the warehouse recorded of each account's last sync (requests, retries).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import duckdb

from benchmarks.peers.measured import ChildRun, run_child
from pipelines.config.account import AccountSettings
from pipelines.config.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(
    r"fetched (\d+), landed (\d+), quarantined (\d+) \((\d+) windows, (\d+) pages, ([\d.]+)s\)"
)
# The whole ledger line: alone (one account from the environment), or inside an account's line
# of an accounts-file sync, ``NAME: [history: ...; ]ledger FIRST..LAST: fetched ...; ...``.
LEDGER_LINE = re.compile(
    r"^(?:(?P<account>[^\s:;]+): (?:[^\n]*?; )?)?"
    r"ledger (?P<first>\d{4}-\d{2}-\d{2})\.\.(?P<last>\d{4}-\d{2}-\d{2}): "
    + SUMMARY.pattern
    + r"(?P<rest>[^;\n]*)",
    re.MULTILINE,
)
# Figures a ledger line may add after its parenthesis; read when present, never required.
REPORTED = {
    "requests": re.compile(r"(\d+) requests"),
    "retries": re.compile(r"(\d+) retr(?:y|ies)"),
    "rate_limited": re.compile(r"(\d+) (?:429s?|rate[- ]limited|throttled)"),
    "concurrency": re.compile(r"(?:concurrency|in flight)\D{0,20}(\d+)|(\d+) in flight"),
}
ACCOUNTS_FILE = "accounts.toml"
CONFIG_ENV = "CREDITLENS_CONFIG"
ACCOUNT_CONCURRENCY_ENV = "CREDITLENS_ACCOUNT_CONCURRENCY"
HOST_CONCURRENCY_ENV = "CREDITLENS_HOST_CONCURRENCY"


@dataclass(frozen=True)
class CreditlensRun:
    run: ChildRun
    # SUMMARY's figures, in its order.
    fetched: int
    landed: int
    quarantined: int
    windows: int
    pages: int
    ledger_s: float
    rows_in_warehouse: int


@dataclass(frozen=True)
class LedgerLine:
    """One account's ledger line as the sync printed it (``account`` None: the single form)."""

    account: str | None
    first: date
    last: date
    fetched: int
    landed: int
    quarantined: int
    windows: int
    pages: int
    ledger_s: float
    reported: dict[str, int] = field(default_factory=dict)  # REPORTED's figures it carried


def ledger_lines(stdout: str) -> dict[str | None, LedgerLine]:
    """Every ledger line of a sync's output, by account (None for the unprefixed line)."""
    found: dict[str | None, LedgerLine] = {}
    for match in LEDGER_LINE.finditer(stdout):
        counts = match.groups()[3:9]  # SUMMARY's groups, after account, first and last
        rest = match.group("rest")
        reported = {
            name: int(next(g for g in hit.groups() if g))
            for name, pattern in REPORTED.items()
            if (hit := pattern.search(rest))
        }
        found[match.group("account")] = LedgerLine(
            match.group("account"),
            date.fromisoformat(match.group("first")),
            date.fromisoformat(match.group("last")),
            *(int(c) for c in counts[:5]),
            float(counts[5]),
            reported,
        )
    return found


@dataclass(frozen=True)
class SyncRun:
    """An account's last ledger sync as the warehouse recorded it (table ``sync_runs``)."""

    account: str
    windows: int
    pages: int
    requests: int
    retries: int
    fetched: int
    duration_s: float


def sync_runs(warehouse: Path) -> dict[str, SyncRun]:
    """Each account's latest sync: its request and retry counts are the client's own, which no
    summary line carries (yet). Empty when the sync failed before recording any."""
    rows = _query(
        warehouse,
        "SELECT account, windows, pages, requests, retries, entries_fetched, duration_s "
        "FROM sync_runs QUALIFY row_number() OVER "
        "(PARTITION BY account ORDER BY finished_at DESC) = 1",
    )
    return {row[0]: SyncRun(row[0], *(int(v) for v in row[1:6]), float(row[6])) for row in rows}


def rows_per_account(warehouse: Path) -> dict[str, int]:
    """Rows landed per account: with many accounts in one warehouse, each is checked alone."""
    rows = _query(warehouse, "SELECT account, count(*) FROM ledger_entries GROUP BY account")
    return {str(account): int(n) for account, n in rows}


def _query(warehouse: Path, sql: str) -> list[tuple[object, ...]]:
    """``sql``'s rows, none when the sync left no warehouse or no such table: a failed sync is
    reported by what it printed, not by an error reading what it never wrote."""
    if not warehouse.exists():
        return []
    try:
        with duckdb.connect(str(warehouse), read_only=True) as con:
            # A missing table must not be "found" among this module's names (``sync_runs``).
            con.execute("SET python_enable_replacements = false")
            return con.execute(sql).fetchall()
    except duckdb.CatalogException:
        return []


def _shell(settings: Settings) -> dict[str, str]:
    """This process's environment without any CREDITLENS_/DAGSTER_ variable, plus ``settings``'s
    own: the child sees exactly the configuration the benchmark means."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREDITLENS_", "DAGSTER_"))}
    env.update(settings.to_env())
    env["PYTHONUNBUFFERED"] = "1"
    return env


def sync_environment(
    base_url: str, key: str, account: str, workdir: Path, first: date
) -> dict[str, str]:
    """A user's shell for this run: the settings' own variables, and the key in the variable the
    account names."""
    settings = Settings(
        warehouse=workdir / "warehouse.duckdb",
        ledger_start=first,
        audit_state_dir=workdir / "audit-state",
        accounts=(AccountSettings(name=account, base_url=base_url),),
    )
    env = _shell(settings)
    env[settings.account.api_key_env] = key
    return env


def accounts_environment(
    base_url: str,
    accounts: Sequence[tuple[str, str]],
    workdir: Path,
    first: date,
    *,
    concurrency: int,
) -> dict[str, str]:
    """An agency's shell: the accounts file (``workdir/accounts.toml``, every account naming the
    variable of its key, ``BENCH_KEY_01``...), the keys in those variables, the installation in
    CREDITLENS_* variables, and ``concurrency`` accounts synced at once."""
    workdir.mkdir(parents=True, exist_ok=True)
    settings = Settings(
        warehouse=workdir / "warehouse.duckdb",
        ledger_start=first,
        audit_state_dir=workdir / "audit-state",
    )
    env = _shell(settings)
    for variable in [k for k in env if k in ("CREDITLENS_ACCOUNT", "CREDITLENS_BASE_URL")]:
        del env[variable]  # the file names the accounts; nothing of the default one is left
    width = max(2, len(str(len(accounts))))
    text = ["[defaults]", f"base_url = {_toml(base_url)}", ""]
    for number, (name, key) in enumerate(accounts, 1):
        variable = f"BENCH_KEY_{number:0{width}d}"
        text += ["[[accounts]]", f"name = {_toml(name)}", f"api_key_env = {_toml(variable)}", ""]
        env[variable] = key
    path = workdir / ACCOUNTS_FILE
    path.write_text("\n".join(text), encoding="utf-8")
    env[CONFIG_ENV] = str(path)
    env[ACCOUNT_CONCURRENCY_ENV] = str(concurrency)
    # Every account on one simulated host: the host's bound must admit each key's share (about
    # rate x round trip in flight, 2 at 20/s and 80 ms), or the bound, not the keys, is measured.
    env[HOST_CONCURRENCY_ENV] = str(max(64, 4 * concurrency))
    return env


def _toml(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's for the text written here)."""
    return json.dumps(text)


def run_sync(
    env: Mapping[str, str],
    workdir: Path,
    args: Sequence[str],
    *,
    timeout_s: float,
    phases: bool = False,
    name: str = "creditlens-sync",
    python: str = sys.executable,
) -> ChildRun:
    """`creditlens sync ARGS` as a child, measured, its exit status left to the caller (with an
    accounts file, 1 means some account failed and the others landed). ``phases``: through
    benchmarks/sync_phases.py, which runs the same command stamping its phases on stderr."""
    workdir.mkdir(parents=True, exist_ok=True)
    entry = ["benchmarks.sync_phases"] if phases else ["pipelines.cli", "sync"]
    return run_child(
        [python, "-m", *entry, *args],
        env=env,
        cwd=ROOT,
        timeout_s=timeout_s,
        log_dir=workdir,
        name=name,
    )


def run_creditlens(
    base_url: str,
    key: str,
    account: str,
    first: date,
    last: date,
    workdir: Path,
    *,
    timeout_s: float,
    python: str = sys.executable,
    extra_env: Mapping[str, str] | None = None,
    ledger_start: date | None = None,
) -> CreditlensRun:
    """``ledger_start``: where the ledger begins when the sync starts later (default: ``first``)."""
    env = sync_environment(base_url, key, account, workdir, ledger_start or first)
    run = run_sync(
        {**env, **(extra_env or {})},
        workdir,
        ["--since", first.isoformat(), "--until", last.isoformat()],
        timeout_s=timeout_s,
        python=python,
    ).check("creditlens sync")
    match = SUMMARY.search(run.stdout)
    if match is None:
        raise RuntimeError(f"creditlens sync printed no ledger summary:\n{run.stdout[-2000:]}")
    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM ledger_entries").fetchone()
    *counts, ledger_s = match.groups()
    # The summary's figures come in the order of the fields after ``run``.
    return CreditlensRun(run, *(int(c) for c in counts), float(ledger_s), int(row[0]) if row else 0)
