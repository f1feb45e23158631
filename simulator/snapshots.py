"""The summary endpoints, derived from the ledger as served at the clock's now.

creditsUsed and breakdown credits are gross sums of debit-category magnitudes in the current
calendar month (UTC); refunds are not netted (docs/contracts.md, Snapshots).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from simulator.categories import category
from simulator.ledger import CompanyLedger
from simulator.money import units_to_decimal
from simulator.scenario import BreakdownMismatchSpec
from simulator.timefmt import (
    MS_PER_DAY,
    day_from_number,
    day_start_ms,
    instant_text,
    ms_to_dt,
    next_month_start,
)

BreakdownKey = tuple[str | None, str | None, str | None]  # (agentId, campaignId, channel)


@dataclass(frozen=True)
class Period:
    start_ms: int
    end_ms: int  # exclusive

    @classmethod
    def containing(cls, now_ms: int) -> Period:
        today = day_from_number(now_ms // MS_PER_DAY)
        return cls(day_start_ms(today.replace(day=1)), day_start_ms(next_month_start(today)))

    @property
    def start_text(self) -> str:
        return instant_text(ms_to_dt(self.start_ms))

    @property
    def end_text(self) -> str:
        return instant_text(ms_to_dt(self.end_ms))


@dataclass(frozen=True)
class PeriodUsage:
    credits_used: int
    breakdown: dict[BreakdownKey, int]


def period_usage(ledger: CompanyLedger, period: Period, now_ms: int) -> PeriodUsage:
    lo = bisect_left(ledger.ts, period.start_ms)
    hi = ledger.served_count(now_ms)
    used = 0
    items: dict[BreakdownKey, int] = {}
    meta = ledger.meta
    amounts = ledger.amount
    for j in range(lo, hi):
        type_, _, _, channel, agent, campaign = meta[j]
        if category(type_) != "debit":
            continue
        magnitude = abs(amounts[j])
        used += magnitude
        key = (agent, campaign, channel)
        items[key] = items.get(key, 0) + magnitude
    return PeriodUsage(used, items)


@dataclass(frozen=True)
class ServedMismatch:
    key: BreakdownKey
    expected: Decimal
    served: Decimal
    delta: Decimal


def _sort_key(key: BreakdownKey) -> tuple[str, str, str]:
    return tuple(part or "" for part in key)  # type: ignore[return-value]


def served_breakdown(
    expected: dict[BreakdownKey, int], mismatches: list[BreakdownMismatchSpec]
) -> tuple[list[tuple[BreakdownKey, Decimal]], list[ServedMismatch]]:
    """Items as served (sorted), with the scenario's disagreements applied."""
    items = {key: units_to_decimal(units) for key, units in expected.items()}
    ordered = sorted(items, key=_sort_key)
    applied: list[ServedMismatch] = []
    for spec in mismatches:
        if spec.agent_id is not None or spec.campaign_id is not None or spec.channel is not None:
            key: BreakdownKey = (spec.agent_id, spec.campaign_id, spec.channel)
        elif spec.item < len(ordered):
            key = ordered[spec.item]
        else:
            continue
        before = items.get(key, Decimal(0))
        items[key] = before + spec.delta
        expected_value = units_to_decimal(expected.get(key, 0))
        applied.append(ServedMismatch(key, expected_value, items[key], items[key] - expected_value))
    return sorted(items.items(), key=lambda kv: _sort_key(kv[0])), applied


def consumption_body(
    balance: Decimal,
    used: Decimal,
    included: Decimal,
    period: Period,
    now_ms: int,
    field_names: dict[str, str],
    extra: dict[str, Any],
) -> dict[str, Any]:
    body = {
        "balance": balance,
        "creditsUsed": used,
        "creditsIncluded": included,
        "periodStart": period.start_text,
        "periodEnd": period.end_text,
        "asOf": instant_text(ms_to_dt(now_ms)),
    }
    renamed = {field_names.get(name, name): value for name, value in body.items()}
    renamed.update(extra)
    return renamed


def breakdown_body(
    items: list[tuple[BreakdownKey, Decimal]], period: Period, extra: dict[str, Any]
) -> dict[str, Any]:
    return {
        "periodStart": period.start_text,
        "periodEnd": period.end_text,
        "items": [
            {"agentId": agent, "campaignId": campaign, "channel": channel, "credits": credits}
            for (agent, campaign, channel), credits in items
        ],
        **extra,
    }
