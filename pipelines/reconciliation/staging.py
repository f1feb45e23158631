"""One account's reconciliation written to disk as it is derived, committed later with the others.

The enriched ledger is the large output (one row per entry), so each slice's rows go to a Parquet
file as soon as the slice is reconciled and memory stays bounded by the slice. The daily balance
and the breaks are small (a row per day, a row per finding): the caller keeps them until the end,
where the movement after the last entry is added to its day (`findings`), then writes them too.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.warehouse.writer import StagedDerived


class AccountStage:
    """The files and rows of one account's reconciliation, under `root` (a temp directory the
    caller removes after the commit)."""

    def __init__(self, root: Path, account: str, since: datetime | None) -> None:
        self.root = root
        self.account = account
        self.since = since
        self.files: dict[str, list[Path]] = defaultdict(list)
        self.rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
        root.mkdir(parents=True, exist_ok=True)

    def write(self, table: str, frame: pl.DataFrame) -> None:
        """`frame`'s rows of `table`, to disk now."""
        if not frame.height:
            return
        path = self.root / f"{table}-{len(self.files[table]):05d}.parquet"
        frame.write_parquet(path, statistics=False)
        self.files[table].append(path)

    def record(self, table: str, row: dict[str, Any]) -> None:
        self.rows[table].append(row)

    def staged(self) -> StagedDerived:
        return StagedDerived(
            account=self.account,
            since=self.since,
            files={t: tuple(p) for t, p in self.files.items()},
            rows={t: tuple(r) for t, r in self.rows.items()},
        )
