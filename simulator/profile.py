"""A company's stable cast: agents, campaigns and which channels each campaign uses.

Derived from (seed, company) only, so ids never change when the clock moves.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from itertools import accumulate
from typing import NamedTuple

from simulator.scenario import CompanySpec

_CAMPAIGN_NAMES = [
    "Winter renewals",
    "Spring outreach",
    "Lapsed customers",
    "Appointment reminders",
    "Payment follow-up",
    "New product launch",
    "Satisfaction survey",
    "Trial conversions",
    "Event invitations",
    "Loyalty upgrades",
    "Inbound support",
    "Lead qualification",
]

# Relative popularity of the usual channels; unknown channels get weight 1.
_CHANNEL_WEIGHT = {"Phone": 9.0, "Chat": 6.0, "SMS": 2.0, "WhatsApp": 2.0, "Email": 1.0}


class Campaign(NamedTuple):
    """A campaign as drawn once per profile. `weight` is its share of the company's
    conversations relative to the other campaigns; `channel_cum` the cumulative weights of its
    channels."""

    id: str
    name: str
    weight: float
    agents: tuple[str, ...]
    channels: tuple[str, ...]
    channel_cum: tuple[float, ...]


@dataclass(frozen=True)
class CompanyProfile:
    """`conversations` lists every (channel, agentId, campaignId) with cumulative weights, so a
    random conversation is one draw and one bisect."""

    name: str
    agents: tuple[str, ...]
    campaigns: tuple[Campaign, ...]
    conversations: tuple[tuple[str, str, str], ...]
    conversation_cum: tuple[float, ...]


def seeded_rng(seed: int, *parts: str) -> random.Random:
    digest = hashlib.sha256("/".join([str(seed), *parts]).encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def _ids(rng: random.Random, prefix: str, count: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        ident = f"{prefix}_{rng.getrandbits(16):04x}"
        if ident not in seen:
            seen.add(ident)
            out.append(ident)
    return out


def build_profile(seed: int, spec: CompanySpec) -> CompanyProfile:
    rng = seeded_rng(seed, spec.name, "profile")
    agents = _ids(rng, "agt", spec.agents)
    count = len(spec.campaign_names) if spec.campaign_names else spec.campaigns
    campaign_ids = _ids(rng, "cmp", count)
    campaigns = []
    for index, campaign_id in enumerate(campaign_ids):
        if spec.campaign_names:
            name = spec.campaign_names[index]
        else:
            name = _CAMPAIGN_NAMES[index % len(_CAMPAIGN_NAMES)]
            if index >= len(_CAMPAIGN_NAMES):
                name = f"{name} {index // len(_CAMPAIGN_NAMES) + 1}"
        team = rng.sample(agents, k=min(len(agents), rng.randint(1, 3)))
        k = min(len(spec.channels), rng.randint(1, 3))
        channels = sorted(rng.sample(spec.channels, k=k), key=spec.channels.index)
        cum = tuple(accumulate(_CHANNEL_WEIGHT.get(c, 1.0) for c in channels))
        weight = rng.uniform(0.3, 3.0)
        campaigns.append(Campaign(campaign_id, name, weight, tuple(team), tuple(channels), cum))
    combos: list[tuple[str, str, str]] = []
    combo_weights: list[float] = []
    for campaign in campaigns:
        channel_total = campaign.channel_cum[-1]
        for channel in campaign.channels:
            share = _CHANNEL_WEIGHT.get(channel, 1.0) / channel_total
            for agent in campaign.agents:
                combos.append((channel, agent, campaign.id))
                combo_weights.append(campaign.weight * share / len(campaign.agents))
    return CompanyProfile(
        name=spec.name,
        agents=tuple(agents),
        campaigns=tuple(campaigns),
        conversations=tuple(combos),
        conversation_cum=tuple(accumulate(combo_weights)),
    )
