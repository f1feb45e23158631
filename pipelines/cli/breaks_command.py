"""`creditlens breaks`: list the findings, and acknowledge the ones that are known and explained.

A finding that someone has looked into and explained should stop failing every run, but never
silently: an acknowledgement names who, where, when and why, holds only while the finding keeps
the gap it was acknowledged with, and shows in the reports with its reason.
"""

from __future__ import annotations

import getpass
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from pipelines.cli.errors import UsageError
from pipelines.config.settings import Settings
from pipelines.warehouse.finding_tables import BREAKDOWN_FINDINGS_SQL
from pipelines.warehouse.read import open_read_only, rows, table_names

_MOVEMENTS_SQL = (
    "SELECT account, break_id, placement, observed_on, gap, acknowledged, acknowledged_reason, "
    "acknowledged_by, detail FROM hidden_movements"
)
_MISMATCHES = (
    "SELECT account, break_id, 'breakdown' AS placement, CAST(period_start AS DATE), difference, "
    "acknowledged, acknowledged_reason, acknowledged_by, detail FROM ("
    + BREAKDOWN_FINDINGS_SQL
    + ")"
)


@dataclass(frozen=True)
class Finding:
    account: str
    break_id: str
    placement: str
    observed_on: object
    gap: Decimal
    acknowledged: bool
    reason: str | None
    by: str | None
    detail: str

    def line(self) -> str:
        state = f"acknowledged by {self.by}: {self.reason}" if self.acknowledged else "open"
        return (
            f"{self.break_id}  {self.account}  {self.placement}  {self.observed_on}  "
            f"{self.gap}  [{state}]  {self.detail}"
        )


def findings(settings: Settings, account: str | None = None) -> list[Finding]:
    """Every hidden movement and breakdown mismatch of the latest reconciliations."""
    with open_read_only(settings.warehouse, settings.lock_timeout_s) as con:
        if "hidden_movements" not in table_names(con):
            raise UsageError("this warehouse predates acknowledgements: run `creditlens sync`")
        found = rows(con, f"{_MOVEMENTS_SQL} UNION ALL {_MISMATCHES} ORDER BY 1, 4, 2")
    return [Finding(*row) for row in found if account is None or row[0] == account]


def list_lines(
    settings: Settings, include_acknowledged: bool, account: str | None = None
) -> list[str]:
    """Every account's findings (the account is the second column), or one account's."""
    if account is not None:
        settings.selecting([account])  # an unknown name is one line listing the configured
    shown = [f for f in findings(settings, account) if include_acknowledged or not f.acknowledged]
    if not shown:
        return ["no open findings" if not include_acknowledged else "no findings"]
    return [f.line() for f in shown]


def acknowledge(settings: Settings, break_id: str, reason: str | None, *, ack: bool) -> str:
    """Appends an ack or unack to ``break_acknowledgements`` and republishes the analyst copy."""
    matches = [f for f in findings(settings) if f.break_id == break_id]
    if not matches:
        raise UsageError(
            f"no finding {break_id} in the latest reconciliation (see `creditlens breaks list "
            "--all`)"
        )
    finding = matches[0]
    if ack and not (reason or "").strip():
        raise UsageError("--reason is required: say why the finding is known and explained")
    if not ack and not finding.acknowledged:
        raise UsageError(f"{break_id} is not acknowledged")
    row = {
        "account": finding.account,
        "break_id": break_id,
        "action": "ack" if ack else "unack",
        "gap": finding.gap if ack else None,
        "reason": reason.strip() if ack and reason else None,
        "acted_by": f"{getpass.getuser()}@{socket.gethostname()}",
        "acted_at": datetime.now(UTC),
    }
    warehouse = settings.open_warehouse()
    warehouse.append("break_acknowledgements", [row])
    warehouse.publish_analyst_copy()
    if ack:
        return (
            f"acknowledged {break_id} ({finding.placement}, gap {finding.gap}) on account "
            f"{finding.account}: {row['reason']}; it lapses if the gap changes"
        )
    return f"{break_id} is no longer acknowledged: it counts again as a break"
