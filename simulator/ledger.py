"""One company's ledger as stored: parallel arrays sorted by createdAt, plus each entry's bytes.

Balances are settled here in chronological order, integer units, so `balanceAfter` is exact and
continuous except where a hidden movement is injected. Hidden movements are resolved to a position
(after entry `position`) while generating, so a later clock only appends.
"""

from __future__ import annotations

import math
import random
from array import array
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field

from simulator.days import Planned, day_rng, plan_day
from simulator.money import SCALE, decimal_to_units
from simulator.profile import CompanyProfile
from simulator.scenario import CompanySpec, HiddenMovementSpec, SpendSpikeSpec
from simulator.timefmt import MS_PER_DAY, day_number, dt_to_ms, to_utc
from simulator.wire import EntryEncoder

_TOPUP_PACK = 500 * SCALE


# The days before a spend spike whose mean daily usage is the company's usual day.
SPIKE_BASELINE_DAYS = 28


@dataclass
class Movement:
    """A resolved hidden movement: it happens after entry `position`, at `time_ms`."""

    position: int
    amount: int
    time_ms: int


@dataclass
class PendingMovement:
    amount: int
    after_index: int | None = None
    after_ms: int | None = None
    tie_group: int | None = None


def pending_from_spec(
    spec: HiddenMovementSpec, initial_now_ms: int, initial_day: int
) -> PendingMovement:
    """Every placement becomes an index, a tie group or an instant ("after the last entry at or
    before it"), resolved while the days are generated."""
    amount = decimal_to_units(spec.amount)
    if spec.after_index is not None:
        return PendingMovement(amount, after_index=spec.after_index)
    if spec.tie_group is not None:
        return PendingMovement(amount, tie_group=spec.tie_group)
    if spec.at is not None:
        return PendingMovement(amount, after_ms=dt_to_ms(to_utc(spec.at)))
    if spec.after_day is not None:
        return PendingMovement(amount, after_ms=(day_number(spec.after_day) + 1) * MS_PER_DAY - 1)
    if spec.day_boundary_days_ago is not None:
        day = initial_day - spec.day_boundary_days_ago
        return PendingMovement(amount, after_ms=(day + 1) * MS_PER_DAY - 1)
    return PendingMovement(amount, after_ms=initial_now_ms)


@dataclass(eq=False, repr=False)
class CompanyLedger:
    """What a company's ledger is generated from, then the ledger itself as it grows.

    The arrays hold one item per entry in createdAt order; `running` is the balance after the
    last generated entry and `next_day` the first UTC day not generated yet.
    """

    seed: int
    spec: CompanySpec
    profile: CompanyProfile
    encode: EntryEncoder
    unsigned: bool
    first_day: int
    opening: int
    grant_for_day: Callable[[int], int | None]
    threshold_for_day: Callable[[int], int]
    pending: list[PendingMovement]
    # The first active day opens with the monthly PlanGrant even when it is not a month's 1st, so
    # the first entry's balance before it is the (zero) opening, as on a real platform.
    opening_grant: bool = False
    # Inclusive (first, last) UTC day numbers with no entries at all: a dormant stretch.
    quiet: tuple[tuple[int, int], ...] = ()
    # Each quiet stretch entered at zero (an Expiry of every credit left) and left from zero.
    quiet_at_zero: bool = False
    # The simulator's initial day: where spend spikes' and top-ups' days_ago count from.
    initial_day: int = 0
    movements: list[Movement] = field(default_factory=list, init=False)
    ts: array[int] = field(default_factory=lambda: array("q"), init=False)
    amount: array[int] = field(default_factory=lambda: array("q"), init=False)
    balance: array[int] = field(default_factory=lambda: array("q"), init=False)
    meta: list[tuple[str, str | None, bool, str | None, str | None, str | None]] = field(
        default_factory=list, init=False
    )
    blobs: list[bytes] = field(default_factory=list, init=False)
    # Each planned day's usage (units), kept only for a company that spikes: a spike's floor is
    # the usual day before it (SPIKE_BASELINE_DAYS), not the spike day's own draw.
    usage_by_day: dict[int, int] = field(default_factory=dict, init=False)
    running: int = field(init=False)
    next_day: int = field(init=False)
    tie_groups: int = field(default=0, init=False)
    version: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.running = self.opening
        self.next_day = self.first_day

    # generation -------------------------------------------------------------------------

    def extend_through(self, last_day: int) -> None:
        """Generates every day up to and including `last_day` (UTC day number)."""
        while self.next_day <= last_day:
            day = self.next_day
            if not self._quiet(day):
                if self.quiet_at_zero and day > self.first_day and self._quiet(day - 1):
                    self.opening_grant = True  # a subscription that starts anew, from zero
                rng = day_rng(self.seed, self.spec.name, day)
                self._settle_day(rng, self._plan(rng, day), self.threshold_for_day(day))
                if self.quiet_at_zero and self._quiet(day + 1):
                    self._expire_everything(day)
            self.next_day += 1
        self.version += 1

    def _quiet(self, day: int) -> bool:
        return any(first <= day <= last for first, last in self.quiet)

    def _expire_everything(self, day: int) -> None:
        """The day's last entry: every credit left expires, so the quiet stretch that follows
        is spent at exactly zero. Settled alone with no threshold, so no top-up follows it."""
        end = (day + 1) * MS_PER_DAY - 1
        at = max(end, self.ts[-1] + 1) if self.ts else end
        expiry: Planned = (at, "Expiry", 0, "Expired unused credits", None, None, None, 1.0)
        self._settle_day(random.Random(0), [expiry], -(2**62))

    def _plan(self, rng: random.Random, day: int) -> list[Planned]:
        """The day's plan; the first active day opens with the company's first credits.

        The opening PlanGrant is added outside `plan_day`, drawing nothing from the RNG, so every
        other entry is the same as it would be without it."""
        grant = self.grant_for_day(day)
        planned = plan_day(rng, day, self.spec, self.profile, grant)
        if self.opening_grant:
            self.opening_grant = False
            if grant is not None and not any(p[1] == "PlanGrant" for p in planned):
                description = "Monthly plan credits"
                opening: Planned = (
                    day * MS_PER_DAY,
                    "PlanGrant",
                    grant,
                    description,
                    None,
                    None,
                    None,
                    None,
                )
                planned.insert(0, opening)
        return self._scripted(day, planned)

    def _scripted(self, day: int, planned: list[Planned]) -> list[Planned]:
        """The day's spend spikes and top-ups (CompanySpec), drawing nothing from the RNG, so
        every other entry stays what it would be without them."""
        ago = self.initial_day - day
        if self.spec.spend_spikes:
            self.usage_by_day[day] = -sum(p[2] for p in planned if p[1] == "Usage")
        for spike in self.spec.spend_spikes:
            if spike.days_ago == ago:
                planned = self._spiked(day, planned, spike)
        for top_up in self.spec.top_ups:
            if top_up.days_ago == ago:
                noon = day * MS_PER_DAY + MS_PER_DAY // 2
                entry: Planned = (
                    noon, "TopUp", decimal_to_units(top_up.amount), "Credit top-up",
                    None, None, None, None,
                )  # fmt: skip
                planned = sorted([*planned, entry], key=lambda p: p[0])
        return planned

    def _spiked(self, day: int, planned: list[Planned], spike: SpendSpikeSpec) -> list[Planned]:
        """The agent's usage multiplied by the factor, and at least the factor times an average
        agent's usual day: the company's mean daily usage over the SPIKE_BASELINE_DAYS before it
        (the spike day's own on a first day), over its agents. A spike whatever the day's draw
        gave the agent, even nothing (an agent no campaign had called yet), and whatever it gave
        the others (a quiet Sunday), so a scenario's anomaly is there on any date. What the
        multiplied entries fall short of is one more Usage entry at noon, on the agent's first
        campaign."""
        agent = self.profile.agents[spike.agent % len(self.profile.agents)]
        spiked = [
            (p[0], p[1], int(p[2] * spike.factor), *p[3:])
            if p[1] == "Usage" and p[5] == agent
            else p
            for p in planned
        ]
        before = [
            self.usage_by_day[d] for d in range(day - SPIKE_BASELINE_DAYS, day)
            if d in self.usage_by_day
        ]  # fmt: skip
        usual = sum(before) / len(before) if before else self.usage_by_day[day]
        floor = int(usual * spike.factor / len(self.profile.agents))
        spent = -sum(p[2] for p in spiked if p[1] == "Usage" and p[5] == agent)
        campaigns = self.profile.campaigns
        if spent >= floor or not campaigns:
            return spiked
        campaign = next((c for c in campaigns if agent in c.agents), campaigns[0])
        channel = campaign.channels[0]
        what = f"{channel} campaign burst"
        noon = day * MS_PER_DAY + MS_PER_DAY // 2
        burst: Planned = (noon, "Usage", spent - floor, what, channel, agent, campaign.id, None)
        return sorted([*spiked, burst], key=lambda p: p[0])

    def _settle_day(self, rng: random.Random, planned: list[Planned], threshold: int) -> None:
        """Balances a day's plan in order; top-ups follow debits that leave the balance low."""
        times = self.ts
        amounts = self.amount
        balances = self.balance
        metas = self.meta
        blobs = self.blobs
        encode = self.encode
        unsigned = self.unsigned
        running = self.running
        count = len(planned)
        index = 0
        topup: Planned | None = None
        while index < count or topup is not None:
            if topup is not None:
                p, topup = topup, None
            else:
                p = planned[index]
                index += 1
            ts, type_, amount, description, channel, agent, campaign, fraction = p
            if fraction is not None:
                if running <= 0:
                    continue
                amount = -int(running * fraction)
                if amount == 0:
                    continue
            i = len(times)
            if i and times[i - 1] == ts and (i < 2 or times[i - 2] != ts):
                self.tie_groups += 1
                if self.pending:
                    self.running = running
                    self._resolve(i, ts, self.tie_groups - 1)
                    running = self.running
            elif self.pending:
                self.running = running
                self._resolve(i, ts, None)
                running = self.running
            running += amount
            if unsigned and type_ == "Adjustment":
                type_ = "AdjustmentDebit" if amount < 0 else "AdjustmentCredit"
            has_description = description != ""
            times.append(ts)
            amounts.append(amount)
            balances.append(running)
            metas.append((type_, description, has_description, channel, agent, campaign))
            blobs.append(
                encode(
                    ts,
                    type_,
                    amount,
                    description,
                    has_description,
                    channel,
                    agent,
                    campaign,
                    running,
                )
            )
            if amount < 0 and running < threshold:
                nxt = planned[index][0] if index < count else ts + 90_000
                at = ts + min(nxt - ts, 1_000 + int(rng.random() * 89_000))
                top_up = math.ceil((3 * threshold - running) / _TOPUP_PACK) * _TOPUP_PACK
                topup = (at, "TopUp", top_up, "Credit top-up", None, None, None, None)
        self.running = running

    def _resolve(self, i: int, ts: int, new_tie: int | None) -> None:
        """Applies the pending movements that happen just before entry i. A tie-group movement
        whose gap another movement takes moves on to the next tie group (HiddenMovementSpec)."""
        keep = []
        fixed = [
            m
            for m in self.pending
            if (m.after_index is not None and m.after_index == i - 1)
            or (m.after_ms is not None and ts > m.after_ms)
        ]
        taken = bool(fixed) or any(m.position == i - 1 for m in self.movements)
        for m in self.pending:
            hit = any(m is f for f in fixed)
            if m.tie_group is not None and m.tie_group == new_tie:
                if taken:
                    m.tie_group += 1
                else:
                    hit = taken = True
            if hit:
                time_ms = m.after_ms if m.after_ms is not None else self.ts[i - 1]
                self.movements.append(Movement(i - 1, m.amount, time_ms))
                self.running += m.amount
            else:
                keep.append(m)
        self.pending = keep

    # reading ----------------------------------------------------------------------------

    def served_count(self, now_ms: int) -> int:
        return bisect_right(self.ts, now_ms)

    def tail_movements(self, k: int, now_ms: int) -> int:
        """Sum of hidden movements after entry k-1 that have happened by now."""
        total = sum(m.amount for m in self.movements if m.position == k - 1 and m.time_ms <= now_ms)
        if k == len(self.ts):
            total += sum(
                m.amount for m in self.pending if m.after_ms is not None and m.after_ms <= now_ms
            )
        return total

    def balance_at(self, now_ms: int) -> int:
        k = self.served_count(now_ms)
        base = self.balance[k - 1] if k else self.opening
        return base + self.tail_movements(k, now_ms)

    # page drift -------------------------------------------------------------------------

    def insert_at_now(self, now_ms: int, entries: list[Planned]) -> None:
        """Real entries arriving at `now`: later (unserved) entries are re-balanced."""
        k = self.served_count(now_ms)
        current = self.balance_at(now_ms)
        for _, type_, amount, description, channel, agent, campaign, _ in entries:
            for m in self.movements:
                if m.position >= k or (m.position == k - 1 and m.time_ms > now_ms):
                    m.position += 1
            current += amount
            meta = (type_, description, description != "", channel, agent, campaign)
            self.ts.insert(k, now_ms)
            self.amount.insert(k, amount)
            self.balance.insert(k, current)
            self.meta.insert(k, meta)
            self.blobs.insert(k, self._blob(k))
            for j in range(k + 1, len(self.ts)):
                self.balance[j] += amount
                self.blobs[j] = self._blob(j)
            self.running += amount
            k += 1
        self.version += 1

    def _blob(self, j: int) -> bytes:
        type_, description, has, channel, agent, campaign = self.meta[j]
        return self.encode(
            self.ts[j],
            type_,
            self.amount[j],
            description,
            has,
            channel,
            agent,
            campaign,
            self.balance[j],
        )
