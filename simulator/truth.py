"""Ground truth for tests: what was served and what was hidden, in exact Decimals.

Only reachable from Python, never over HTTP, so a pipeline under test cannot peek.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from simulator.ledger import CompanyLedger
from simulator.money import units_to_decimal
from simulator.timefmt import day_start_ms, ms_to_dt, ms_to_text


@dataclass(frozen=True)
class GroundTruth:
    """A company as served up to the clock's now, and what it hid; its parts follow it.

    `opening_balance` is the balance the ledger starts from, before any entry: 0 unless the
    scenario set one explicitly, in which case nothing explains it and `hidden_movements` also
    lists it (position -1). So opening_balance + the signed amounts + the gaps of the other
    movements = balance.
    """

    company: str
    now: datetime
    entries: list[dict[str, Any]]
    hidden_movements: list[HiddenMovement]
    breakdown_mismatches: list[BreakdownMismatch]
    balance: Decimal
    opening_balance: Decimal
    credits_used: Decimal
    credits_included: Decimal
    period_start: datetime
    period_end: datetime
    breakdown: dict[tuple[str | None, str | None, str | None], Decimal]

    def entries_between(self, start: date, end: date) -> list[dict[str, Any]]:
        """Entries of UTC days start..end inclusive, chronological."""
        lo = ms_to_dt(day_start_ms(start))
        hi = ms_to_dt(day_start_ms(end) + 86_400_000)
        return [e for e in self.entries if lo <= e["createdAt"] < hi]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.entries)


@dataclass(frozen=True)
class BreakdownMismatch:
    agent_id: str | None
    campaign_id: str | None
    channel: str | None
    expected: Decimal
    served: Decimal
    delta: Decimal


@dataclass(frozen=True)
class HiddenMovement:
    """A balance change with no entry, as observable: between `position` and the next entry.

    expected = balanceAfter before the gap + the next entry's signed amount (or, at the end, the
    last balanceAfter); observed = the next entry's balanceAfter (or the /Consumption balance).
    Position -1 is before the first entry (`before_created_at` None): a ledger starts empty, so
    expected = 0 and observed = the first entry's balance before it (balanceAfter - amount), as
    a pipeline's opening-balance finding sees it.
    """

    position: int
    before_created_at: datetime | None
    after_created_at: datetime | None
    expected_balance: Decimal
    observed_balance: Decimal
    gap: Decimal

    @property
    def at_end(self) -> bool:
        return self.after_created_at is None


def served_entries(
    ledger: CompanyLedger, k: int, unsigned: bool, null_descriptions: bool
) -> list[dict[str, Any]]:
    out = []
    for j in range(k):
        type_, description, has, channel, agent, campaign = ledger.meta[j]
        signed = units_to_decimal(ledger.amount[j])
        ms = ledger.ts[j]
        out.append(
            {
                "position": j,
                "createdAt": ms_to_dt(ms),
                "createdAtText": ms_to_text(ms),
                "type": type_,
                "amount": abs(signed) if unsigned else signed,
                "signedAmount": signed,
                "description": None if (null_descriptions and not has) else description,
                "hasDescription": has,
                "channel": channel,
                "agentId": agent,
                "campaignId": campaign,
                "balanceAfter": units_to_decimal(ledger.balance[j]),
            }
        )
    return out


def served_movements(ledger: CompanyLedger, k: int, now_ms: int) -> list[HiddenMovement]:
    """The movements observable in the first k entries and the balance at now, in order.

    An explicit non-zero opening balance is one too: the platform would have shown the credits
    that made it, so to a pipeline it is a movement before the first entry.
    """
    positions = {m.position for m in ledger.movements if m.position < k - 1 or m.time_ms <= now_ms}
    if k == len(ledger.ts) and any(
        m.after_ms is not None and m.after_ms <= now_ms for m in ledger.pending
    ):
        positions.add(k - 1)
    if ledger.opening != 0:
        positions.add(-1)
    out = []
    for p in sorted(positions):
        if p > k - 1:
            continue
        after_ts: datetime | None
        if p < 0:
            before_ts = None
            expected = 0
            if k:
                observed = ledger.balance[0] - ledger.amount[0]
                after_ts = ms_to_dt(ledger.ts[0])
            else:
                observed = ledger.balance_at(now_ms)
                after_ts = None
        elif p < k - 1:
            before_ts = ms_to_dt(ledger.ts[p])
            expected = ledger.balance[p] + ledger.amount[p + 1]
            observed = ledger.balance[p + 1]
            after_ts = ms_to_dt(ledger.ts[p + 1])
        else:
            before_ts = ms_to_dt(ledger.ts[p])
            expected = ledger.balance[p]
            observed = expected + ledger.tail_movements(k, now_ms)
            after_ts = None
        if observed != expected:
            out.append(
                HiddenMovement(
                    p,
                    before_ts,
                    after_ts,
                    units_to_decimal(expected),
                    units_to_decimal(observed),
                    units_to_decimal(observed - expected),
                )
            )
    return out
