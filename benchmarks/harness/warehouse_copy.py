"""A truncated copy of a benchmark's warehouse: the same company at a smaller size, so two sizes
are measured on the same data. Shared by the reconciliation benchmarks."""

from __future__ import annotations

import shutil
from pathlib import Path


def truncated_copy(source: Path, target: Path, account: str, entries: int | None) -> int:
    """Copies the warehouse; keeps the account's first whole days totalling about `entries`
    (all if None). Returns the account's entries in the copy. Meant to run in a helper child, so
    the measuring parent stays small."""
    import duckdb

    shutil.copyfile(source, target)
    con = duckdb.connect(str(target))
    try:
        con.execute("SET TimeZone = 'UTC'")
        if entries is not None:
            _keep_first_days(con, account, entries)
        [(count,)] = con.execute(
            "SELECT count(*) FROM ledger_entries WHERE account = ?", [account]
        ).fetchall()
    finally:
        con.close()
    return int(count)


def _keep_first_days(con: object, account: str, entries: int) -> None:
    days = con.execute(  # type: ignore[attr-defined]
        "SELECT CAST(created_at AS DATE) AS day, count(*) FROM ledger_entries "
        "WHERE account = ? GROUP BY ALL ORDER BY day",
        [account],
    ).fetchall()
    total, cutoff = 0, None
    for day, count in days:
        if total >= entries:
            cutoff = day
            break
        total += count
    if cutoff is not None:
        con.execute(  # type: ignore[attr-defined]
            "DELETE FROM ledger_entries WHERE account = ? AND CAST(created_at AS DATE) >= ?",
            [account, cutoff],
        )
        con.execute("CHECKPOINT")  # type: ignore[attr-defined]
