"""One ledger sync: read whole UTC days from the API, land them exactly once.

Shared by the Dagster asset and anything else that syncs, so there is one way to do it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from pipelines.api.client import PlatformClient
from pipelines.api.ledger_reader import LedgerReader
from pipelines.ledger.staging import LedgerStaging, landing_groups
from pipelines.ledger.window_workers import PageSeen, WindowJob, stage_windows
from pipelines.warehouse.writer import LedgerLanding, Warehouse


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
    duration_s: float

    def metadata(self) -> dict[str, object]:
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
        }


ProgressHook = Callable[[PageSeen], None]


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
    on_windows: Callable[[int, int], None] | None = None,
) -> LedgerSyncResult:
    started = time.monotonic()
    started_at = datetime.now(UTC)
    windows = LedgerReader(client).windows(first, last)
    if on_windows:
        on_windows(len(windows), 0)
    # Claims the run's folder (and sweeps those of killed syncs) before any window stages in it.
    owner = LedgerStaging(staging_root / run_id, account, run_id)
    try:
        jobs = [
            WindowJob(client.settings, w, account, run_id, owner.fetched_at, owner.directory)
            for w in windows
        ]
        staged = stage_windows(jobs, client, processes=client.settings.processes, on_page=on_page)
        fetched = sum(s.fetched for s in staged)
        requests = sum(s.requests for s in staged)
        retries = sum(s.retries for s in staged)
        pages = sum(s.pages for s in staged)
        restarts = sum(s.restarts for s in staged)
        result = warehouse.land_ledger(
            LedgerLanding(
                account=account,
                run_id=run_id,
                range_start=first,
                range_end=last,
                entry_files=landing_groups([f for s in staged for f in s.entry_files]),
                quarantine_files=[f for s in staged for f in s.quarantine_files],
                started_at=started_at,
                windows=len(staged),
                pages=pages,
                window_restarts=restarts,
                requests=requests,
                retries=retries,
                entries_fetched=fetched,
            )
        )
    finally:
        owner.cleanup()
    warehouse.publish_analyst_copy()
    return LedgerSyncResult(
        account=account,
        run_id=run_id,
        range_start=first,
        range_end=last,
        windows=len(staged),
        pages=pages,
        window_restarts=restarts,
        requests=requests,
        retries=retries,
        fetched=fetched,
        landed=result.landed,
        quarantined=result.quarantined,
        replaced=result.replaced,
        duration_s=time.monotonic() - started,
    )
