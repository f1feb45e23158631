"""Planning one UTC day of a company's ledger from an RNG keyed by (seed, company, day).

A day's plan never depends on the clock, so advancing it only appends days. Amounts that depend
on the running balance (expiries, top-ups) are settled later, in `ledger.py`. Planned entries are
plain tuples (see `Planned`) because a million of them must be made in a few seconds.
"""

from __future__ import annotations

import random
from bisect import bisect
from itertools import accumulate

from simulator.profile import CompanyProfile, seeded_rng
from simulator.scenario import CompanySpec
from simulator.timefmt import MS_PER_DAY, day_from_number

# Share of a day's activity per UTC hour: business hours, a quieter evening, a trickle at night.
_HOUR_WEIGHTS = [1, 1, 1, 1, 1, 2, 4, 8, 12, 14, 14, 13, 11, 13, 14, 14, 12, 10, 8, 6, 4, 3, 2, 1]
_HOUR_CUM = list(accumulate(_HOUR_WEIGHTS))
_WEEKDAY_FACTOR = [1.15, 1.15, 1.15, 1.15, 1.15, 0.7, 0.5]
_ADJUSTMENT_REASONS = ["Manual adjustment", "Billing correction", "Goodwill credit"]

# (ts, type, amount units, description, channel, agentId, campaignId, expiry fraction or None)
Planned = tuple[int, str, int, str, str | None, str | None, str | None, float | None]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n > 1 else ''}"


# channel -> (units per unit of use, lowest count, highest count, description of a count)
_COUNTED = {
    "Chat": (500, 2, 40, lambda n: f"Chat conversation {n} messages"),
    "SMS": (75, 1, 4, lambda n: f"SMS {_plural(n, 'segment')}"),
    "WhatsApp": (150, 1, 20, lambda n: f"WhatsApp conversation {_plural(n, 'message')}"),
    "Email": (10, 1, 3, lambda n: f"Email {_plural(n, 'message')}"),
}
_PHONE_RATE = 200  # units per second: 0.02 credit
_COST_CACHE: dict[tuple[str, int], tuple[int, str]] = {}


def _cost(channel: str, n: int) -> tuple[int, str]:
    key = (channel, n)
    hit = _COST_CACHE.get(key)
    if hit is not None:
        return hit
    if channel == "Phone":
        hit = (n * _PHONE_RATE, f"Phone call {n // 60}m{n % 60:02d}s")
    elif channel in _COUNTED:
        rate, _, _, describe = _COUNTED[channel]
        hit = (n * rate, describe(n))
    else:
        hit = (n * 200, f"{channel} interaction {_plural(n, 'unit')}")
    if len(_COST_CACHE) < 50_000:
        _COST_CACHE[key] = hit
    return hit


def usage_cost(rng: random.Random, channel: str) -> tuple[int, str]:
    """(cost in 1/10000 credits, description) of one conversation on a channel."""
    rand = rng.random
    if channel == "Phone":
        return _cost(channel, min(3600, int(rng.expovariate(1 / 150)) + 5))
    counted = _COUNTED.get(channel)
    low, high = (counted[1], counted[2]) if counted else (1, 10)
    return _cost(channel, low + int(rand() * (high - low + 1)))


def conversation(rng: random.Random, profile: CompanyProfile) -> tuple[str, str, str]:
    """(channel, agentId, campaignId) of a random conversation."""
    cum = profile.conversation_cum
    index = bisect(cum, rng.random() * cum[-1])
    return profile.conversations[min(index, len(cum) - 1)]


def _times(rng: random.Random, n: int, tie_rate: float) -> list[int]:
    """Sorted ms-of-day of n events; a share of them collapsed into tie groups of 2..5."""
    total = _HOUR_CUM[-1]
    rand = rng.random
    times = sorted(
        bisect(_HOUR_CUM, rand() * total) * 3_600_000 + int(rand() * 3_600_000) for _ in range(n)
    )
    if tie_rate > 0:
        start_group = tie_rate / 3.5
        i = 0
        while i < n - 1:
            if rand() < start_group:
                size = min(2 + int(rand() * 4), n - i)
                for j in range(i + 1, i + size):
                    times[j] = times[i]
                i += size
            else:
                i += 1
    return times


def day_rng(seed: int, company: str, day_num: int) -> random.Random:
    return seeded_rng(seed, company, day_from_number(day_num).isoformat())


def plan_day(
    rng: random.Random,
    day_num: int,
    spec: CompanySpec,
    profile: CompanyProfile,
    monthly_grant: int | None,
) -> list[Planned]:
    """The day's entries in chronological order (ties keep their listed order).

    `monthly_grant` (units) is given on the 1st of a month when the subscription grants credits.
    """
    day_ms = day_num * MS_PER_DAY
    day = day_from_number(day_num)
    out: list[Planned] = []
    rand = rng.random
    if day.day == 1 and monthly_grant is not None:
        if rand() < spec.expiry_probability:
            fraction = 0.05 + rand() * 0.25
            out.append((day_ms, "Expiry", 0, "Expired unused credits", None, None, None, fraction))
        out.append(
            (day_ms, "PlanGrant", monthly_grant, "Monthly plan credits", None, None, None, None)
        )

    rate = spec.entries_per_day * _WEEKDAY_FACTOR[day.weekday()] * (0.8 + rand() * 0.4)
    n = int(rate) + (1 if rand() < rate - int(rate) else 0)
    refund_cut = spec.refund_rate
    adjust_cut = refund_cut + spec.adjustment_rate
    rare_cut = adjust_cut + (spec.rare_type_rate if spec.rare_types else 0.0)
    rare_types = sorted(spec.rare_types.items())
    missing = spec.missing_description_rate
    zero = spec.zero_usage_rate
    cum = profile.conversation_cum
    top = cum[-1]
    last = len(cum) - 1
    combos = profile.conversations
    append = out.append
    for ms in _times(rng, n, spec.tie_rate):
        ts = day_ms + ms
        roll = rand()
        if roll >= rare_cut:
            channel, agent, campaign = combos[min(bisect(cum, rand() * top), last)]
            if rand() < zero:
                cost = 0
                what = "Phone call 0m00s" if channel == "Phone" else f"{channel} not started"
            else:
                cost, what = usage_cost(rng, channel)
            if rand() < missing:
                what = ""
            append((ts, "Usage", -cost, what, channel, agent, campaign, None))
        elif roll < refund_cut:
            channel, agent, campaign = conversation(rng, profile)
            cost, what = usage_cost(rng, channel)
            append((ts, "Refund", cost, f"Refund: {what}", channel, agent, campaign, None))
        elif roll < adjust_cut:
            amount = (1 + int(rand() * 2000)) * 250 * (1 if rand() < 0.5 else -1)
            reason = _ADJUSTMENT_REASONS[int(rand() * len(_ADJUSTMENT_REASONS))]
            append((ts, "Adjustment", amount, reason, None, None, None, None))
        else:
            name, direction = rare_types[int(rand() * len(rare_types))]
            amount = (50, 100, 250)[int(rand() * 3)] * 10_000
            if direction == "debit":
                amount = -amount
            append((ts, name, amount, f"{name} credits", None, None, None, None))

    if spec.identical_pairs_per_day > 0:
        pairs = int(spec.identical_pairs_per_day)
        if rand() < spec.identical_pairs_per_day - pairs:
            pairs += 1
        for _ in range(pairs):
            out.extend(_identical_pair(rng, day_ms, profile))
        if pairs:
            out.sort(key=lambda p: p[0])  # stable: ties keep their order
    return out


def _identical_pair(rng: random.Random, day_ms: int, profile: CompanyProfile) -> list[Planned]:
    """Two zero-amount entries equal in every field: only their count tells them apart."""
    ts = day_ms + 6 * 3_600_000 + int(rng.random() * 12 * 3_600_000)
    channel, agent, campaign = conversation(rng, profile)
    what = "Phone call 0m00s" if channel == "Phone" else f"{channel} not started"
    entry: Planned = (ts, "Usage", 0, what, channel, agent, campaign, None)
    return [entry, entry]
