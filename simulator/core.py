"""The simulated platform: companies, keys, ledgers, snapshots, clock, faults and network in one
object.

All state changes (clock, page drift) and reads happen under one lock, so a test thread moving
the clock never sees a half-generated day from the server thread.
"""

from __future__ import annotations

import random
import threading
from bisect import bisect_left, bisect_right
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from simulator.clock import Clock
from simulator.days import Planned, conversation, usage_cost
from simulator.faults import Faults
from simulator.keys import ApiKey, CompanyInfo, Scope, derive_secret
from simulator.ledger import CompanyLedger, pending_from_spec
from simulator.money import decimal_to_units, units_to_decimal
from simulator.network import Network, NetworkSpec
from simulator.profile import CompanyProfile, build_profile
from simulator.ranges import LedgerQuery
from simulator.scenario import Scenario
from simulator.snapshots import (
    BreakdownKey,
    Period,
    PeriodUsage,
    ServedMismatch,
    breakdown_body,
    consumption_body,
    period_usage,
    served_breakdown,
)
from simulator.subscription import SimulatedSubscription
from simulator.timefmt import MS_PER_DAY, dt_to_ms, ms_to_dt, to_utc
from simulator.traffic import Traffic
from simulator.truth import BreakdownMismatch, GroundTruth, served_entries, served_movements
from simulator.wire import entry_encoder, envelope_extra, page_bytes


def _never_top_up(day: int) -> int:
    """No balance is low enough for an automatic top-up (CompanySpec.auto_top_up = False)."""
    return -(2**62)


class Simulator:
    """`Simulator(Scenario.named("small"), seed=0, now=datetime(...))`; see simulator/README.md."""

    def __init__(
        self,
        scenario: Scenario | str = "default",
        seed: int = 0,
        now: datetime | None = None,
        demo_key: str | None = "demo-key",
        network: NetworkSpec | None = None,
    ) -> None:
        if isinstance(scenario, str):
            scenario = Scenario.resolve(scenario)
        self.scenario = scenario
        self.seed = seed
        initial = now or scenario.now or datetime.now(UTC)
        initial_ms = dt_to_ms(to_utc(initial))
        initial_day = initial_ms // MS_PER_DAY
        self._lock = threading.RLock()
        self.faults = Faults()
        self.faults.configure(scenario.faults)
        # `network` wins over the scenario's section; `sim.network.spec` is what is in force.
        self.network = Network(network if network is not None else scenario.network, seed)
        self.traffic = Traffic()
        self._unsigned = scenario.sign_convention == "unsigned"
        self._newest_first = scenario.entry_order == "newest_first"
        self._envelope_extra = envelope_extra(scenario.drift)
        encode = entry_encoder(self._unsigned, scenario.drift)
        self._ledgers: dict[str, CompanyLedger] = {}
        self._subscriptions: dict[str, SimulatedSubscription] = {}
        self._profiles: dict[str, CompanyProfile] = {}
        self._usage_cache: dict[str, tuple[tuple[int, int, int], PeriodUsage]] = {}
        self._keys: dict[str, ApiKey] = {}
        companies = []
        for index, spec in enumerate(scenario.companies):
            subscription = SimulatedSubscription(spec, scenario.plans, initial_ms)
            profile = build_profile(seed, spec)
            # Unset, the ledger starts at 0 and records the first credits as a PlanGrant entry;
            # an explicit opening is a balance no entry explains (see CompanySpec).
            opening = spec.opening_balance if spec.opening_balance is not None else Decimal(0)
            quiet = tuple(
                (initial_day - ago, initial_day - until) for ago, until in spec.quiet_days
            )
            pending = [pending_from_spec(m, initial_ms, initial_day) for m in spec.hidden_movements]
            self._ledgers[spec.name] = CompanyLedger(
                seed=seed,
                spec=spec,
                profile=profile,
                encode=encode,
                unsigned=self._unsigned,
                first_day=initial_day - spec.history_days + 1,
                opening=decimal_to_units(opening),
                grant_for_day=subscription.grant_for_day,
                threshold_for_day=(
                    subscription.threshold_for_day if spec.auto_top_up else _never_top_up
                ),
                pending=pending,
                opening_grant=spec.opening_balance is None,
                quiet=quiet,
                quiet_at_zero=spec.quiet_at_zero,
                initial_day=initial_day,
            )
            self._subscriptions[spec.name] = subscription
            self._profiles[spec.name] = profile
            keys = [
                ApiKey(
                    spec.name,
                    k.label,
                    k.scope,
                    k.revoked,
                    k.secret or derive_secret(seed, spec.name, k.label),
                )
                for k in spec.keys
            ]
            if index == 0 and demo_key:
                keys.append(ApiKey(spec.name, "demo", "full", False, demo_key))
            for key in keys:
                if key.secret in self._keys:
                    raise ValueError(f"duplicate API key ({key.label} of {key.company})")
                self._keys[key.secret] = key
            companies.append(CompanyInfo(spec.name, tuple(keys)))
        self.companies: tuple[CompanyInfo, ...] = tuple(companies)
        self._drift_rng = random.Random(f"{seed}/page-drift")
        self.clock = Clock(ms_to_dt(initial_ms), on_change=self._on_clock)
        self._ensure(initial_ms)

    # keys -------------------------------------------------------------------------------

    def key_for(self, company: str, scope: Scope = "full", revoked: bool = False) -> str:
        """The text of a key of `company` with that scope (the first one declared)."""
        for info in self.companies:
            if info.name == company:
                for key in info.keys:
                    if key.scope == scope and key.revoked == revoked:
                        return key.secret
                raise KeyError(f"{company} has no key with scope={scope} revoked={revoked}")
        raise KeyError(f"no company {company!r}")

    def authenticate(self, secret: str) -> ApiKey | None:
        return self._keys.get(secret)

    # clock ------------------------------------------------------------------------------

    def _on_clock(self, now: datetime) -> None:
        self._ensure(dt_to_ms(now))

    def _ensure(self, now_ms: int) -> None:
        day = now_ms // MS_PER_DAY
        with self._lock:
            for ledger in self._ledgers.values():
                if ledger.next_day <= day:
                    ledger.extend_through(day)

    def _ledger(self, company: str) -> CompanyLedger:
        try:
            return self._ledgers[company]
        except KeyError:
            raise KeyError(f"no company {company!r}") from None

    # served views -----------------------------------------------------------------------

    def ledger_page(self, company: str, query: LedgerQuery) -> bytes:
        with self._lock:
            now_ms = self.clock.now_ms
            self._ensure(now_ms)
            ledger = self._ledgers[company]
            ts = ledger.ts
            k = bisect_right(ts, now_ms)
            lo = bisect_left(ts, query.start_ms)
            hi = min(bisect_right(ts, query.end_ms), k)
            total = max(0, hi - lo)
            offset = (query.page_number - 1) * query.page_size
            if offset >= total:
                chunk: list[bytes] = []
            elif self._newest_first:
                top = hi - offset
                chunk = ledger.blobs[max(lo, top - query.page_size) : top]
                chunk.reverse()
            else:
                first = lo + offset
                chunk = ledger.blobs[first : min(hi, first + query.page_size)]
        return page_bytes(chunk, total, query.page_number, query.page_size, self._envelope_extra)

    def _usage(self, company: str, period: Period, now_ms: int) -> PeriodUsage:
        ledger = self._ledgers[company]
        key = (ledger.served_count(now_ms), ledger.version, period.start_ms)
        cached = self._usage_cache.get(company)
        if cached is not None and cached[0] == key:
            return cached[1]
        usage = period_usage(ledger, period, now_ms)
        self._usage_cache[company] = (key, usage)
        return usage

    def _usage_now(self, company: str) -> tuple[int, Period, PeriodUsage]:
        """The clock's now, its billing period and the usage so far. The caller holds the lock,
        so the three speak of one instant even while a test thread moves the clock."""
        now_ms = self.clock.now_ms
        self._ensure(now_ms)
        period = Period.containing(now_ms)
        return now_ms, period, self._usage(company, period, now_ms)

    def _served_breakdown(
        self, company: str, usage: PeriodUsage
    ) -> tuple[list[tuple[BreakdownKey, Decimal]], list[ServedMismatch]]:
        """What /Consumption/breakdown serves, and which of the scenario's mismatches it carries."""
        mismatches = list(self.scenario.company(company).breakdown_mismatches)
        return served_breakdown(usage.breakdown, mismatches)

    def consumption(self, company: str) -> dict[str, Any]:
        with self._lock:
            now_ms, period, usage = self._usage_now(company)
            return consumption_body(
                units_to_decimal(self._ledgers[company].balance_at(now_ms)),
                units_to_decimal(usage.credits_used),
                self._subscriptions[company].plan_at(now_ms).monthly_credits,
                period,
                now_ms,
                self.scenario.summary_fields,
                self.scenario.drift.extra_envelope_fields,
            )

    def breakdown(self, company: str) -> dict[str, Any]:
        with self._lock:
            _, period, usage = self._usage_now(company)
            items, _ = self._served_breakdown(company, usage)
            return breakdown_body(items, period, self.scenario.drift.extra_envelope_fields)

    def subscription(self, company: str) -> dict[str, Any]:
        return self._subscriptions[company].snapshot(self.clock.now_ms)

    def campaigns(self, company: str) -> list[dict[str, str]]:
        return [{"id": c.id, "name": c.name} for c in self._profiles[company].campaigns]

    # page drift -------------------------------------------------------------------------

    def add_entries_now(self, company: str, count: int = 1) -> None:
        """Real usage entries arriving at the clock's now (the page-drift fault uses this)."""
        with self._lock:
            now_ms = self.clock.now_ms
            self._ensure(now_ms)
            profile = self._profiles[company]
            rng = self._drift_rng
            entries: list[Planned] = []
            for _ in range(count):
                channel, agent, campaign = conversation(rng, profile)
                cost, what = usage_cost(rng, channel)
                entries.append((now_ms, "Usage", -cost, what, channel, agent, campaign, None))
            self._ledgers[company].insert_at_now(now_ms, entries)

    def top_up_now(self, company: str, amount: Decimal) -> None:
        """A credit top-up posted at the clock's now, as the platform's billing page would:
        nothing before now changes (the walkthrough of docs/alerts.md tops up with it)."""
        if amount <= 0:
            raise ValueError("a top-up's amount must be more than 0")
        with self._lock:
            now_ms = self.clock.now_ms
            self._ensure(now_ms)
            self._ledger(company).insert_at_now(
                now_ms,
                [(now_ms, "TopUp", decimal_to_units(amount), "Credit top-up", None, None, None,
                  None)],
            )  # fmt: skip

    # ground truth -----------------------------------------------------------------------

    def truth(self, company: str) -> GroundTruth:
        with self._lock:
            ledger = self._ledger(company)
            now_ms, period, usage = self._usage_now(company)
            k = ledger.served_count(now_ms)
            _, applied = self._served_breakdown(company, usage)
            return GroundTruth(
                company=company,
                now=ms_to_dt(now_ms),
                entries=served_entries(
                    ledger, k, self._unsigned, self.scenario.drift.null_descriptions
                ),
                hidden_movements=served_movements(ledger, k, now_ms),
                breakdown_mismatches=[
                    BreakdownMismatch(m.key[0], m.key[1], m.key[2], m.expected, m.served, m.delta)
                    for m in applied
                ],
                balance=units_to_decimal(ledger.balance_at(now_ms)),
                opening_balance=units_to_decimal(ledger.opening),
                credits_used=units_to_decimal(usage.credits_used),
                credits_included=Decimal(
                    self._subscriptions[company].plan_at(now_ms).monthly_credits
                ),
                period_start=ms_to_dt(period.start_ms),
                period_end=ms_to_dt(period.end_ms),
                breakdown={key: units_to_decimal(u) for key, u in usage.breakdown.items()},
            )

    def __repr__(self) -> str:
        names = ", ".join(c.name for c in self.companies)
        return f"Simulator(scenario={self.scenario.name!r}, seed={self.seed}, companies=[{names}])"
