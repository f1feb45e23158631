"""Through the real sync: the second sync's reconciliation is incremental, `--full-reconcile`
makes it full, and both leave the same derived rows."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from tests.conftest import Simulated
from tests.pipeline.helpers import cli_in_process, table

Start = Callable[..., Simulated]
Env = Callable[..., Settings]
DERIVED = (
    "SELECT * EXCLUDE (run_id, checked_at) FROM hidden_movements ORDER BY ALL",
    "SELECT * EXCLUDE (run_id) FROM daily_balance ORDER BY ALL",
    "SELECT * FROM ledger_chain ORDER BY ALL",
    "SELECT * FROM ambiguous_tie_days ORDER BY ALL",
    "SELECT * EXCLUDE (run_id, checked_at, reconciled_from) FROM reconciliation_runs "
    "ORDER BY checked_at DESC LIMIT 1",
)
CARRY = "SELECT mode, reason FROM reconciliation_carry"


@pytest.mark.slow
def test_a_daily_sync_reconciles_incrementally_and_full_reconcile_redoes_it_all(
    simulated: Start, creditlens_env: Env
) -> None:
    s = simulated("hidden_movements")
    settings = creditlens_env(s)
    first = run_sync(settings, None, None)
    assert first.reconciliation.success
    assert table(settings.warehouse, CARRY) == [
        ("full", "full: no carried state (first reconciliation)")
    ]
    again = run_sync(settings, None, None)  # from the last synced day minus the lookback
    [(mode, reason)] = table(settings.warehouse, CARRY)
    assert (mode, reason[:17]) == ("incremental", "incremental from "), reason
    meta = again.reconciliation.materializations["balance_breaks"]
    assert meta["reconciled"] == reason
    kept = [table(settings.warehouse, sql) for sql in DERIVED]
    full = cli_in_process("sync", "--full-reconcile")
    assert full.returncode == 0, full.stderr
    assert "  reconciled full: requested (--full-reconcile)" in full.stdout.splitlines()
    assert table(settings.warehouse, CARRY) == [("full", "full: requested (--full-reconcile)")]
    assert [table(settings.warehouse, sql) for sql in DERIVED] == kept


def test_sync_offers_full_reconcile() -> None:
    """The flag is the command's (the slow test above proves what it does)."""
    shown = cli_in_process("sync", "--help")
    assert shown.returncode == 0, shown.stderr
    assert "--full-reconcile" in shown.stdout
