"""A company's subscription over time: the plan in force decides each month's PlanGrant."""

from __future__ import annotations

from bisect import bisect_right
from datetime import timedelta
from typing import Any

from simulator.money import SCALE, decimal_to_units
from simulator.scenario import CompanySpec, PlanSpec
from simulator.timefmt import (
    MS_PER_DAY,
    day_from_number,
    day_start_ms,
    dt_to_ms,
    instant_text,
    ms_to_dt,
    next_month_start,
    to_utc,
)

_NO_GRANT_STATUSES = {"cancelled", "canceled", "suspended", "expired"}


class SimulatedSubscription:
    """The plan and status in force at each instant, from the scenario's changes."""

    def __init__(self, spec: CompanySpec, plans: dict[str, PlanSpec], initial_now_ms: int) -> None:
        self.plans = plans
        changes = []
        for change in spec.subscription_changes:
            if change.at is not None:
                at_ms = dt_to_ms(to_utc(change.at))
            else:
                offset = timedelta(days=change.offset_days or 0.0)
                at_ms = initial_now_ms + int(offset / timedelta(milliseconds=1))
            changes.append((at_ms, change.plan, change.status))
        changes.sort(key=lambda c: c[0])
        self._times: list[int] = []
        self._states: list[tuple[str, str]] = []
        plan, status = spec.plan, spec.status
        for at_ms, new_plan, new_status in changes:
            plan = new_plan or plan
            status = new_status or status
            self._times.append(at_ms)
            self._states.append((plan, status))
        self._initial = (spec.plan, spec.status)

    def state_at(self, ms: int) -> tuple[str, str]:
        index = bisect_right(self._times, ms)
        return self._states[index - 1] if index else self._initial

    def plan_at(self, ms: int) -> PlanSpec:
        return self.plans[self.state_at(ms)[0]]

    def grant_for_day(self, day: int) -> int | None:
        plan, status = self.state_at(day * MS_PER_DAY)
        if status.lower() in _NO_GRANT_STATUSES:
            return None
        return decimal_to_units(self.plans[plan].monthly_credits)

    def threshold_for_day(self, day: int) -> int:
        """Top-ups happen when the balance falls under a tenth of the monthly credits."""
        monthly = decimal_to_units(self.plan_at(day * MS_PER_DAY).monthly_credits)
        return max(100 * SCALE, monthly // 10)

    def snapshot(self, now_ms: int) -> dict[str, Any]:
        plan_name, status = self.state_at(now_ms)
        plan = self.plans[plan_name]
        today = day_from_number(now_ms // MS_PER_DAY)
        start = today.replace(day=1)
        end = next_month_start(today)
        return {
            "plan": plan_name,
            "status": status,
            "features": list(plan.features),
            "limits": {
                "monthlyCredits": plan.monthly_credits,
                "agents": plan.agents,
                "concurrentCalls": plan.concurrent_calls,
            },
            "currentPeriodStart": instant_text(ms_to_dt(day_start_ms(start))),
            "currentPeriodEnd": instant_text(ms_to_dt(day_start_ms(end))),
        }
