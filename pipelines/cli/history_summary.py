"""The sync summary's history lines: what discovery found, and how the synced days stand to
where the ledger begins (before it: read as asked; after it: left out, the balance carried in).

Both ways of starting elsewhere than the first day are said, never refused or left silent: the
opening check (transforms/opening.py) reads the same days the other way round.
"""

from __future__ import annotations

from datetime import date, timedelta

from pipelines.ledger.history_search import History


def history_summary(history: History | None, begins: date | None, first: date) -> list[str]:
    """``history``: what discovery found in this sync, if it ran; ``begins``: where the ledger
    begins (this or an earlier discovery); ``first``: the first day this sync read."""
    lines = []
    if history is not None:
        lines.append(f"history: {history.sentence()}")
    if begins is not None and first < begins:
        before = (begins - timedelta(days=1)).isoformat()
        lines.append(
            f"history: the ledger begins {begins.isoformat()} (its first entry, found by history "
            f"discovery); {first.isoformat()}..{before}, before it, were read as asked"
        )
    if begins is not None and first > begins and history is not None:
        skipped_to = (first - timedelta(days=1)).isoformat()
        lines.append(
            f"history: {begins.isoformat()}..{skipped_to} not synced (--since or "
            "CREDITLENS_LEDGER_START); the balance of those days is carried in"
        )
    return lines
