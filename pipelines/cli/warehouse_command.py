"""`creditlens warehouse migrate`: the configured warehouse, or an export, moved into a new file
or a DuckLake (pipelines/warehouse/move.py; docs/lake.md says when and how)."""

from __future__ import annotations

import os
from pathlib import Path

from pipelines.config.settings import Settings
from pipelines.warehouse.lake import shown
from pipelines.warehouse.move import move


def migrate(to: str, source: str | None) -> list[str]:
    """Moves ``source`` (default: CREDITLENS_WAREHOUSE) into ``to``, a file path or a DuckLake
    location read as CREDITLENS_WAREHOUSE would read it; the lines to print."""
    here = Settings.from_env()
    target = Settings.from_env({**os.environ, "CREDITLENS_WAREHOUSE": to})
    origin = Path(source) if source else here.warehouse
    moved = move(origin, target.warehouse, here.lock_timeout_s)
    where = shown(target.warehouse)
    lines = [f"  {name}: {rows} rows" for name, rows in moved.rows.items() if rows]
    return [
        f"moved {moved.total} rows of {len(moved.rows)} tables from {shown(origin)} to {where}",
        *lines,
        f"next: set CREDITLENS_WAREHOUSE={to if target.lake else target.warehouse} and sync; "
        f"{shown(origin)} is left as it was",
    ]
