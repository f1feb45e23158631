"""Closed statements built directly: the documents and messages are functions of them alone."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from pipelines.statements.close import (
    ClosedStatement,
    DimensionTotal,
    LineChange,
    Restatement,
    StatementLine,
)

D = Decimal


def statement(
    account: str = "acme",
    month: date = date(2026, 10, 1),
    usage: Decimal = D("-1250.125001"),
    agents: int = 3,
    version: int = 1,
    opening: Decimal = D("10000.000000"),
) -> ClosedStatement:
    """A month that ties out: opening + every movement + hidden movements = closing."""
    movements = {
        "debits": (usage, 40),
        "credits": (D("500.000000"), 2),
        "refunds": (D("12.500000"), 1),
        "adjustments": (D("0"), 0),
        "other": (D("-5.000000"), 1),
    }
    hidden = D("-1.250000")
    closing = opening + sum(a for a, _ in movements.values()) + hidden
    lines = [
        StatementLine("opening", opening, 0),
        *(StatementLine(n, a, c) for n, (a, c) in movements.items()),
        StatementLine("hidden_movements", hidden, 0),
        StatementLine("closing", closing, 0),
        StatementLine("debits", usage - D("0.500000"), 39, "Usage"),
        StatementLine("debits", D("-0.500000"), 1, "Fee"),
        StatementLine("credits", D("500.000000"), 2, "TopUp"),
        StatementLine("refunds", D("12.500000"), 1, "Refund"),
        StatementLine("other", D("-5.000000"), 1, "Expiry"),
    ]
    share = usage / agents
    totals = [
        DimensionTotal("agent", f"agent-{i:03d}", share.quantize(D("0.000001")), 1)
        for i in range(agents)
    ]
    totals += [
        DimensionTotal("campaign", "Winter renewals", usage, 40),
        DimensionTotal("channel", "voice", usage, 39),
        DimensionTotal("channel", None, D("0"), 1),
    ]
    closed = datetime(2026, 11, 3, 6, 0, tzinfo=UTC) + timedelta(days=version - 1)
    return ClosedStatement(
        account=account,
        month=month,
        version=version,
        lines=tuple(lines),
        totals=tuple(totals),
        content_hash=f"{account}-{month:%Y%m}-{version}".encode().hex().ljust(64, "0")[:64],
        data_as_of=closed - timedelta(hours=1),
        closed_at=closed,
    )


def restatement(account: str = "acme") -> Restatement:
    """Version 2 of October: a late usage entry of -7.5 (closing moves with it)."""
    previous = statement(account)
    current = statement(account, usage=D("-1257.625001"), version=2)
    return Restatement(
        previous,
        current,
        (
            LineChange("debits", previous.line("debits"), current.line("debits"), "late entries"),
            LineChange(
                "closing", previous.line("closing"), current.line("closing"), "late entries"
            ),
        ),
    )
