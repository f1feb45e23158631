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
from pipelines.api.ledger_reader import LedgerReader, PageRead, WindowDone, WindowRestart
from pipelines.ledger.staging import LedgerStaging
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


ProgressHook = Callable[[PageRead], None]


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
    reader = LedgerReader(client)
    windows = reader.windows(first, last)
    if on_windows:
        on_windows(len(windows), 0)
    staging = LedgerStaging(staging_root / run_id, account, run_id)
    try:
        for window in windows:
            for event in reader.read_window(window):
                if isinstance(event, PageRead):
                    staging.add_page(event)
                    if on_page:
                        on_page(event)
                elif isinstance(event, WindowRestart):
                    staging.restart_window()
                elif isinstance(event, WindowDone):
                    staging.finish_window(event.window)
        result = warehouse.land_ledger(
            LedgerLanding(
                account=account,
                run_id=run_id,
                range_start=first,
                range_end=last,
                entry_files=staging.entry_files,
                quarantine_files=staging.quarantine_files,
                started_at=started_at,
                windows=reader.stats.windows,
                pages=reader.stats.pages,
                window_restarts=reader.stats.restarts,
                requests=client.requests_sent,
                retries=client.retries,
                entries_fetched=staging.fetched,
            )
        )
    finally:
        staging.cleanup()
    warehouse.publish_analyst_copy()
    return LedgerSyncResult(
        account=account,
        run_id=run_id,
        range_start=first,
        range_end=last,
        windows=reader.stats.windows,
        pages=reader.stats.pages,
        window_restarts=reader.stats.restarts,
        requests=client.requests_sent,
        retries=client.retries,
        fetched=staging.fetched,
        landed=result.landed,
        quarantined=result.quarantined,
        replaced=result.replaced,
        duration_s=time.monotonic() - started,
    )
