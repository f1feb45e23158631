"""Staging a window's entries on disk while the ledger is read.

Pages are buffered as they arrive and validated in batches (one column-wise pass per ~20,000
entries rather than per page of 100); each batch is fingerprinted and written to its own Parquet
file at once, so memory holds one batch, not a window. The warehouse lands every staged file in
one short transaction, numbering identical entries within each day there (the occurrence half of
the identity rule needs whole days, which only the landing has). A restarted window's files are
deleted.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.api.json_text import dumps_exact
from pipelines.api.ledger_reader import PageRead
from pipelines.api.windows import Window
from pipelines.api.wire import WireColumns, parse_created_at, validate_columns
from pipelines.runtime.failpoints import failpoint
from pipelines.runtime.processes import process_alive
from pipelines.warehouse.landing import LANDING_ROWS
from transforms.identify import with_fingerprint

BATCH_ROWS = 20_000
OWNER_FILE = "owner.pid"


# When this process last swept each staging root: the accounts of one step share the root, and
# each account's sweep read every other's folder (500 accounts: 250,000 reads per sync).
_SWEPT: dict[Path, float] = {}
_SWEPT_LOCK = threading.Lock()


def sweep_abandoned(root: Path, *, every_s: float | None = None) -> None:
    """Removes what killed syncs left: staged copies of ledger data must not pile up.

    A run's folder names the process that owns it; a folder whose process is gone (or that has
    no owner file, from a crash before it was written) is abandoned. Folders of live syncs, of
    other accounts running in parallel, are left alone. ``every_s``: skipped when this process
    swept the same root less than that long ago (once per step, not once per account).
    """
    if not root.is_dir():
        return
    if every_s is not None:
        now = time.monotonic()
        with _SWEPT_LOCK:
            last = _SWEPT.get(root)
            if last is not None and now - last < every_s:
                return
            _SWEPT[root] = now
    for folder in root.iterdir():
        if not folder.is_dir():
            continue
        try:
            owner = int((folder / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            owner = None
        if owner is None and _just_made(folder):
            continue  # another account's sync, between making its folder and claiming it
        if owner is None or not process_alive(owner):
            shutil.rmtree(folder, ignore_errors=True)


# A folder with no owner yet is left alone this long: the syncs of several accounts run side by
# side in one process, and one may sweep while another has just made its folder.
CLAIM_GRACE_S = 60.0


def _just_made(folder: Path) -> bool:
    try:
        return time.time() - folder.stat().st_mtime < CLAIM_GRACE_S
    except OSError:
        return False


QUARANTINE_SCHEMA = {
    "account": pl.String(),
    "run_id": pl.String(),
    "quarantined_at": pl.Datetime("us", "UTC"),
    "window_start": pl.Date(),
    "window_end": pl.Date(),
    "entry_day": pl.Date(),
    "page_number": pl.Int32(),
    "page_position": pl.Int32(),
    "reason": pl.String(),
    "raw_json": pl.String(),
}


# A createdAt whose seconds read 60. Read as the next second, a leap second at 23:59:60 moves
# the entry to the next day: into a window only when that window reaches the next day, so the same
# entry landed on one sync and was "outside the window" on another. Nothing can hold it exactly,
# so it is quarantined on every sync, with the day its text names.
_LEAP_SECOND = re.compile(r"^\s*\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:60(?:\D|$)")
_DAY_PREFIX = re.compile(r"^\s*(\d{4}-\d\d-\d\d)")


def leap_seconds(created: list[Any]) -> dict[int, str]:
    """Positions whose createdAt is a leap second, with the reason they are quarantined.

    Every entry of a backfill passes here: the substring test keeps the regex to the rare text
    holding ":60" (a tenth of a microsecond an entry).
    """
    return {
        i: f"createdAt {value!r} has second 60 (a leap second): no timestamp holds it exactly, "
        "and read as the next second it would move the entry (at 23:59:60, to the next day)"
        for i, value in enumerate(created)
        if type(value) is str and ":60" in value and _LEAP_SECOND.match(value)
    }


def quarantine_day(created_at: Any, window: Window) -> date:
    """The day a rejected entry is filed under, inside the window so the sync replaces it.

    Decided by the entry itself wherever it can be, so overlapping syncs file it alike: the UTC
    day of its createdAt, else the calendar day its text names (a leap second, hour 25), and
    only when neither is in the window, the window's first day.
    """
    moment = parse_created_at(created_at)
    if moment is not None and window.contains(moment.date()):
        return moment.date()
    named = _DAY_PREFIX.match(created_at) if type(created_at) is str else None
    if named is not None:
        try:
            day = date.fromisoformat(named.group(1))
        except ValueError:
            day = None
        if day is not None and window.contains(day):
            return day
    return window.first


@dataclass(frozen=True)
class StagedFile:
    """One staged batch and the UTC days it holds (landing groups files by disjoint days)."""

    path: Path
    rows: int
    first_day: date
    last_day: date


def landing_groups(files: list[StagedFile], max_rows: int = LANDING_ROWS) -> list[list[Path]]:
    """Staged files in groups whose days no other group holds, each of about ``max_rows``.

    Occurrences are numbered per account and UTC day, so a day's rows must land in one INSERT;
    any more than that only makes DuckDB hold more at once. Files whose day ranges overlap are
    merged (whatever order the API returns entries in), then neighbours are packed up to
    ``max_rows``.
    """
    merged: list[tuple[date, date, list[StagedFile]]] = []
    for f in sorted(files, key=lambda f: (f.first_day, f.last_day)):
        if merged and f.first_day <= merged[-1][1]:
            first, last, members = merged[-1]
            merged[-1] = (first, max(last, f.last_day), [*members, f])
        else:
            merged.append((f.first_day, f.last_day, [f]))
    groups: list[list[Path]] = []
    rows = 0
    for _, _, members in merged:
        size = sum(f.rows for f in members)
        if not groups or rows + size > max_rows:
            groups.append([])
            rows = 0
        groups[-1].extend(f.path for f in members)
        rows += size
    return groups


@dataclass
class WindowStage:
    """Rows of the window being read; emptied on restart."""

    files: list[StagedFile] = field(default_factory=list)
    staged: int = 0
    quarantine: list[dict[str, object]] = field(default_factory=list)
    pending: list[PageRead] = field(default_factory=list)
    pending_rows: int = 0
    fetched: int = 0


class LedgerStaging:
    def __init__(
        self,
        directory: Path,
        account: str,
        run_id: str,
        *,
        fetched_at: datetime | None = None,
        owner: bool = True,
    ) -> None:
        """``owner``: this process owns the run's folder (a window worker stages into the
        folder of the sync that started it, and must neither sweep nor claim it)."""
        self.directory = directory
        self.account = account
        self.run_id = run_id
        self.fetched_at = fetched_at or datetime.now(UTC)
        if owner:
            sweep_abandoned(directory.parent, every_s=CLAIM_GRACE_S)
        directory.mkdir(parents=True, exist_ok=True)
        if owner:
            (directory / OWNER_FILE).write_text(str(os.getpid()))
        self.entry_files: list[StagedFile] = []
        self.quarantine_files: list[Path] = []
        self.fetched = 0
        self.staged = 0
        self.quarantined = 0
        self._batches = 0
        self._window = WindowStage()

    def add_page(self, page: PageRead) -> None:
        stage = self._window
        stage.fetched += page.count
        stage.pending.append(page)
        stage.pending_rows += page.count
        failpoint("fetch")
        if stage.pending_rows >= BATCH_ROWS:
            self._validate(page.window)

    def _validate(self, window: Window) -> None:
        stage = self._window
        if not stage.pending:
            return
        reads, stage.pending, stage.pending_rows = stage.pending, [], 0
        parts: list[WireColumns] = []
        known: dict[int, str] = {}
        pages: list[int] = []
        positions: list[int] = []
        owners: list[int] = []  # which read each row came from, to find a reject's raw JSON
        for n, read in enumerate(reads):
            columns, reasons = read.page.columns()
            offset = len(pages)
            known.update({offset + i: reason for i, reason in reasons.items()})
            parts.append(columns)
            for i, reason in leap_seconds(columns.created).items():
                known.setdefault(offset + i, reason)
            pages.extend([read.page_number] * read.count)
            positions.extend(range(read.count))
            owners.extend([n] * read.count)
        frame, reasons = validate_columns(
            WireColumns.concat(parts), known, window.first, window.last
        )
        if frame.height:
            index = frame["position"]
            batch = with_fingerprint(
                frame.with_columns(
                    pl.lit(self.account).alias("account"),
                    pl.lit(self.run_id).alias("run_id"),
                    pl.lit(self.fetched_at, dtype=pl.Datetime("us", "UTC")).alias("fetched_at"),
                    pl.lit(window.first).alias("window_start"),
                    pl.lit(window.last).alias("window_end"),
                    pl.Series("page_number", pages, dtype=pl.Int32).gather(index),
                    pl.Series("page_position", positions, dtype=pl.Int32).gather(index),
                ).drop("position")
            )
            self._batches += 1
            path = (
                self.directory / f"entries-{window.first.isoformat()}-{self._batches:05d}.parquet"
            )
            batch.write_parquet(path, compression="lz4", statistics=False)
            first_day, last_day = batch.select(
                pl.col("entry_day").min().alias("first"), pl.col("entry_day").max().alias("last")
            ).row(0)
            stage.files.append(StagedFile(path, batch.height, first_day, last_day))
            stage.staged += batch.height
        now = datetime.now(UTC)
        for i, reason in sorted(reasons.items()):
            raw = reads[owners[i]].page.raw(positions[i])
            created_at = raw.get("createdAt") if isinstance(raw, dict) else None
            stage.quarantine.append(
                {
                    "account": self.account,
                    "run_id": self.run_id,
                    "quarantined_at": now,
                    "window_start": window.first,
                    "window_end": window.last,
                    "entry_day": quarantine_day(created_at, window),
                    "page_number": pages[i],
                    "page_position": positions[i],
                    "reason": reason,
                    "raw_json": dumps_exact(raw),
                }
            )

    def restart_window(self) -> None:
        for staged in self._window.files:
            staged.path.unlink(missing_ok=True)
        self._window = WindowStage()

    def finish_window(self, window: Window) -> None:
        self._validate(window)
        stage, self._window = self._window, WindowStage()
        name = f"{window.first.isoformat()}_{window.last.isoformat()}"
        self.entry_files.extend(stage.files)
        self.staged += stage.staged
        if stage.quarantine:
            path = self.directory / f"quarantine-{name}.parquet"
            pl.DataFrame(stage.quarantine, schema=QUARANTINE_SCHEMA).write_parquet(path)
            self.quarantine_files.append(path)
            self.quarantined += len(stage.quarantine)
        self.fetched += stage.fetched

    def cleanup(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
