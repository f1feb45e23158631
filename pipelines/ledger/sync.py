"""One ledger sync: read whole UTC days from the API, land them exactly once.

Shared by the Dagster asset and anything else that syncs, so there is one way to do it. The time
spent waiting for the warehouse's lock (another writer holding it) is measured apart from the
sync's own time: a sync of 6 pages that waited 16 s for the lock took 0.2 s, and says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pipelines.api.client import PlatformClient
from pipelines.api.ledger_reader import LedgerReader
from pipelines.api.windows import Window
from pipelines.ledger.staging import LedgerStaging, landing_groups
from pipelines.ledger.window_workers import PageSeen, WindowJob, stage_windows
from pipelines.orchestration.account_work import account_slug
from pipelines.warehouse.disk import disk_full, is_disk_full
from pipelines.warehouse.lock import measured_waits
from pipelines.warehouse.writer import LandingResult, LedgerLanding, Warehouse

# Below this a wait on the lock is not worth a word in the summary line.
NOTABLE_WAIT_S = 0.05


@dataclass(frozen=True)
class LedgerSyncResult:
    account: str
    run_id: str
    range_start: date
    range_end: date
    windows: int
    pages: int
    window_restarts: int
    requests: int
    retries: int
    fetched: int
    landed: int
    quarantined: int
    replaced: int
    duration_s: float  # the sync's own time: reading, staging, landing, publishing
    lock_wait_s: float = 0.0  # spent waiting for the warehouse's lock, not in duration_s
    # The key's rate limit as the sync met it: 429s absorbed by waiting (never a failure), and
    # the requests in flight its limiter settled on at the end, and at most.
    rate_limited: int = 0
    concurrency: int = 0
    peak_concurrency: int = 0

    @classmethod
    def of(
        cls,
        landing: LedgerLanding,
        landed: LandingResult,
        duration_s: float,
        lock_wait_s: float = 0.0,
        **reading: int,
    ) -> LedgerSyncResult:
        """The sync as it landed. What it read is the landing's, under the same names, so it is
        taken by name rather than copied field by field; what it wrote is the warehouse's."""
        shared = {f.name for f in fields(landing)}
        read = {f.name: getattr(landing, f.name) for f in fields(cls) if f.name in shared}
        return cls(
            **read,
            fetched=landing.entries_fetched,
            landed=landed.landed,
            quarantined=landed.quarantined,
            replaced=landed.replaced,
            duration_s=duration_s,
            lock_wait_s=lock_wait_s,
            **reading,
        )

    def metadata(self) -> dict[str, Any]:
        """What Dagster records; ``from_metadata`` reads it back, so the keys live here only."""
        return {
            "account": self.account,
            "range": f"{self.range_start.isoformat()}..{self.range_end.isoformat()}",
            "windows": self.windows,
            "pages": self.pages,
            "window_restarts": self.window_restarts,
            "requests": self.requests,
            "retries": self.retries,
            "entries_fetched": self.fetched,
            "entries_landed": self.landed,
            "entries_quarantined": self.quarantined,
            "rows_replaced": self.replaced,
            "duration_s": round(self.duration_s, 3),
            "lock_wait_s": round(self.lock_wait_s, 3),
            "rate_limited": self.rate_limited,
            "concurrency": self.concurrency,
            "peak_concurrency": self.peak_concurrency,
        }

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any], run_id: str = "") -> LedgerSyncResult:
        first, _, last = str(metadata["range"]).partition("..")
        return cls(
            account=str(metadata["account"]),
            run_id=run_id,
            range_start=date.fromisoformat(first),
            range_end=date.fromisoformat(last),
            windows=int(metadata["windows"]),
            pages=int(metadata["pages"]),
            window_restarts=int(metadata["window_restarts"]),
            requests=int(metadata["requests"]),
            retries=int(metadata["retries"]),
            fetched=int(metadata["entries_fetched"]),
            landed=int(metadata["entries_landed"]),
            quarantined=int(metadata["entries_quarantined"]),
            replaced=int(metadata["rows_replaced"]),
            duration_s=float(metadata["duration_s"]),
            lock_wait_s=float(metadata.get("lock_wait_s", 0.0)),
            rate_limited=int(metadata.get("rate_limited", 0)),
            concurrency=int(metadata.get("concurrency", 0)),
            peak_concurrency=int(metadata.get("peak_concurrency", 0)),
        )

    def summary(self) -> str:
        """One line for people (and the ingestion benchmark, which parses it up to the closing
        parenthesis): the sync's own time, then any wait for the lock, apart."""
        waited = (
            f", after waiting {self.lock_wait_s:.1f}s for the warehouse lock"
            if self.lock_wait_s >= NOTABLE_WAIT_S
            else ""
        )
        throttled = (
            f"; {self.rate_limited} rate-limited responses absorbed" if self.rate_limited else ""
        )
        pace = (
            f"; concurrency {self.concurrency} (peak {self.peak_concurrency})"
            if self.concurrency
            else ""
        )
        return (
            f"ledger {self.range_start.isoformat()}..{self.range_end.isoformat()}: "
            f"fetched {self.fetched}, landed {self.landed}, quarantined {self.quarantined} "
            f"({self.windows} windows, {self.pages} pages, {round(self.duration_s, 3)}s){waited}"
            f"{throttled}{pace}"
        )


ProgressHook = Callable[[PageSeen], None]


@dataclass
class StagedLedger:
    """One account's days read and staged on disk, validated, waiting for the step's commit:
    what the landing needs (file paths, not rows: memory holds none of them) and what the
    account's summary line reports about its reading."""

    landing: LedgerLanding
    staging: LedgerStaging
    own_s: float  # reading and staging, lock waits excluded
    waited_s: float
    reading: dict[str, int]  # the client's rate-limit figures, read before it closed

    def result(self, landed: LandingResult, landing_s: float, waited_s: float) -> LedgerSyncResult:
        """``landing_s`` and ``waited_s``: the step's commit (shared by its accounts)."""
        return LedgerSyncResult.of(
            self.landing,
            landed,
            self.own_s + landing_s,
            self.waited_s + waited_s,
            **self.reading,
        )


def sync_ledger(
    client: PlatformClient,
    warehouse: Warehouse,
    *,
    account: str,
    first: date,
    last: date,
    run_id: str,
    staging_root: Path,
    on_page: ProgressHook | None = None,
    publish: bool = True,
) -> LedgerSyncResult:
    """One account read, staged and landed; ``publish``: refresh the analyst copy after.
    A step of several accounts stages each (``stage_ledger``) and lands them all at once
    (``land_staged``) instead."""
    staged = stage_ledger(
        client, account=account, first=first, last=last, run_id=run_id,
        staging_root=staging_root, on_page=on_page,
    )  # fmt: skip
    try:
        with measured_waits() as waits:
            started = time.monotonic()
            landed = warehouse.land_ledger(staged.landing)
            if publish:
                warehouse.publish_analyst_copy()
            elapsed = time.monotonic() - started
    finally:
        staged.staging.cleanup()
    return staged.result(landed, elapsed - waits.seconds, waits.seconds)


def land_staged(
    warehouse: Warehouse, staged: Sequence[StagedLedger]
) -> dict[str, LedgerSyncResult | BaseException]:
    """Every staged account in ONE transaction; per account its result, or why it was left
    out. The staged files are removed whatever happened: a rerun reads again."""
    try:
        with measured_waits() as waits:
            started = time.monotonic()
            landed = warehouse.land_ledgers([s.landing for s in staged]) if staged else {}
            elapsed = time.monotonic() - started
    finally:
        for s in staged:
            s.staging.cleanup()
    own = elapsed - waits.seconds
    out: dict[str, LedgerSyncResult | BaseException] = {}
    for s in staged:
        done = landed[s.landing.account]
        out[s.landing.account] = (
            done if isinstance(done, BaseException) else s.result(done, own, waits.seconds)
        )
    return out


def stage_ledger(
    client: PlatformClient,
    *,
    account: str,
    first: date,
    last: date,
    run_id: str,
    staging_root: Path,
    on_page: ProgressHook | None = None,
) -> StagedLedger:
    """Reads the account's days and stages them on disk, validated (quarantine rules,
    fingerprints), as soon as they are read; nothing is written to the warehouse. Its folder is
    removed here if the reading fails, else by the landing."""
    with measured_waits() as waits:
        started = time.monotonic()
        started_at = datetime.now(UTC)
        windows = LedgerReader(client).windows(first, last)
        # Claims the run's folder (and sweeps those of killed syncs) before any window stages in
        # it. A folder per account: the accounts of one run stage side by side.
        owner = LedgerStaging(staging_root / f"{run_id}-{account_slug(account)}", account, run_id)
        try:
            landing = _stage(client, owner, windows, first, last, started_at, on_page)
        except BaseException:
            owner.cleanup()
            raise
        elapsed = time.monotonic() - started
    return StagedLedger(
        landing,
        owner,
        elapsed - waits.seconds,
        waits.seconds,
        {
            "rate_limited": client.throttled,
            "concurrency": client.concurrency_level,
            "peak_concurrency": client.peak_concurrency,
        },
    )


def _stage(
    client: PlatformClient,
    owner: LedgerStaging,
    windows: Sequence[Window],
    first: date,
    last: date,
    started_at: datetime,
    on_page: ProgressHook | None,
) -> LedgerLanding:
    account, run_id = owner.account, owner.run_id
    jobs = [
        WindowJob(client.settings, w, account, run_id, owner.fetched_at, owner.directory)
        for w in windows
    ]
    try:
        staged = stage_windows(jobs, client, processes=client.settings.processes, on_page=on_page)
    except Exception as exc:  # polars and worker processes keep only the OS's words
        if is_disk_full(exc):
            raise disk_full(owner.directory.parent, "nothing was changed") from None
        raise
    return LedgerLanding(
        account=account,
        run_id=run_id,
        range_start=first,
        range_end=last,
        entry_files=landing_groups([f for s in staged for f in s.entry_files]),
        quarantine_files=[f for s in staged for f in s.quarantine_files],
        started_at=started_at,
        windows=len(staged),
        pages=sum(s.pages for s in staged),
        window_restarts=sum(s.restarts for s in staged),
        requests=sum(s.requests for s in staged),
        retries=sum(s.retries for s in staged),
        entries_fetched=sum(s.fetched for s in staged),
    )
