"""The synced warehouse's figures the alert tests set their thresholds from."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from tests.pipeline.helpers import table


def balance(env: dict[str, str]) -> Decimal:
    """The platform's balance the sync stored: the simulator's ledger runs up to the clock's
    now, so its figure depends on the time of day and is read, never written in a test."""
    ((found,),) = table(
        Path(env["CREDITLENS_WAREHOUSE"]), "SELECT balance FROM consumption_snapshots"
    )
    return Decimal(found)


def above(env: dict[str, str]) -> int:
    """A threshold the balance is under: firing."""
    return int(balance(env)) + 100
