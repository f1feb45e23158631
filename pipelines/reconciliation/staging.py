"""One account's reconciliation written to disk as it is derived, committed later with the others.

The enriched ledger is the large output (one row per entry), so each slice's rows go to a Parquet
file as soon as the slice is reconciled and memory stays bounded by the slice. The daily balance
and the breaks are small (a row per day, a row per finding): they are kept until the end, where
the movement after the last entry is added to its day, then written too.
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


def with_movement_after_last(
    daily: pl.DataFrame, movement: dict[str, Any], run_id: str
) -> pl.DataFrame:
    """A movement after the last entry, added to its day's hidden movements and closing; a day
    without entries gets a row of its own, opening at the last closing before it."""
    day, gap = movement["observed_on"], movement["gap"]
    if daily.filter(pl.col("day") == day).height:
        on_day = pl.col("day") == day
        return daily.with_columns(
            pl.when(on_day).then(pl.col(c) + gap).otherwise(pl.col(c)).alias(c)
            for c in ("hidden_movements", "closing")
        )
    before = daily.filter(pl.col("day") < day).sort("day").tail(1)
    if not before.height:
        return daily
    closing = before["closing"][0]
    zero = pl.lit(0).cast(daily.schema["debits"])
    added = before.select(
        "account",
        pl.lit(day, dtype=pl.Date).alias("day"),
        pl.lit(closing).cast(daily.schema["opening"]).alias("opening"),
        *(zero.alias(c) for c in ("debits", "credits", "refunds", "adjustments", "other")),
        pl.lit(gap).cast(daily.schema["hidden_movements"]).alias("hidden_movements"),
        pl.lit(closing + gap).cast(daily.schema["closing"]).alias("closing"),
        pl.lit(0, dtype=daily.schema["entries"]).alias("entries"),
        pl.lit(run_id).alias("run_id"),
    )
    return pl.concat([daily, added.select(daily.columns)], how="vertical_relaxed")
